//! Single sign-on with OpenID Connect: the provider as watasu talks to it (`provider`), the
//! sign-ins started there and not yet back (`pending`), and the accounts' link to the provider's
//! subject (`links`). The use case that ties them together is `services::sso`.

pub mod links;
pub mod pending;
pub mod provider;

pub use links::{Link, SsoLinks};
pub use pending::{PendingLogin, PendingLogins};
pub use provider::{Authorization, CLOCK_SKEW, Identity, Provider, ProviderError};
