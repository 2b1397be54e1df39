//! The OpenID provider as watasu talks to it (crate `openidconnect`, over reqwest with rustls).
//! Discovery happens when a sign-in first needs it and is kept for an hour, so the app starts and
//! passwords keep working while the provider is down. No request waits behind another's
//! discovery: while one runs, the others use the client from before or are told the provider is
//! unavailable at once, and a failed discovery is remembered for [`FAILURE_TTL`]. A sign-in is the authorization code flow
//! with PKCE (S256), `state` and `nonce`; the ID token's signature (against the provider's
//! published keys), issuer, audience, expiry and nonce are checked by the crate, with
//! [`CLOCK_SKEW`] allowed either way between the provider's clock and ours.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet, EndpointSet, IssuerUrl,
    Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RequestTokenError, Scope, TokenResponse,
    core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata, CoreTokenResponse},
    reqwest,
};
use subtle::ConstantTimeEq;

use crate::{
    config::SsoConfig,
    secret::{SecretString, random_token, sha256_hex},
};

/// How far the provider's clock may be from ours: an ID token is still taken this long after its
/// `exp`, and one issued up to this far in the future.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);
/// How long discovered metadata (endpoints and signing keys) is used before it is read again.
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);
/// How long a failed discovery stands: sign-ins meanwhile get the 503 page at once rather than
/// each waiting for a provider that just did not answer.
const FAILURE_TTL: Duration = Duration::from_secs(30);
/// A provider that does not answer within this long counts as unreachable.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

type Client =
    CoreClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointMaybeSet, EndpointMaybeSet>;

/// What the last discovery came to, and when.
enum Discovery {
    Ready(Instant, Arc<Client>),
    Failed(Instant, String),
}

/// The last discovery and whether one is running now. Held only to read or write these, never
/// across a request to the provider.
#[derive(Default)]
struct DiscoveryState {
    last: Option<Discovery>,
    running: bool,
}

type Discovered = Arc<Mutex<DiscoveryState>>;

/// Marks the running discovery over however its request ends (also when it is dropped).
struct Running<'a>(&'a Mutex<DiscoveryState>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.lock().expect("discovery state").running = false;
    }
}

/// Where to send the browser, and what to remember until it comes back.
pub struct Authorization {
    pub url: String,
    pub state: SecretString,
    pub nonce: SecretString,
    pub pkce_verifier: SecretString,
}

/// What a checked ID token says about the person.
#[derive(Debug)]
pub struct Identity {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
    pub name: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Discovery or the token endpoint did not answer (or answered nonsense): try again later.
    #[error("the provider is unavailable: {0}")]
    Unavailable(String),
    /// The token endpoint refused the code (expired, used already, not ours).
    #[error("the provider refused the code: {0}")]
    CodeRefused(String),
    /// The ID token failed a check; `reason` is a short code for the log.
    #[error("the ID token was refused ({reason}): {detail}")]
    TokenRefused { reason: &'static str, detail: String },
}

#[derive(Clone)]
pub struct Provider {
    config: Arc<SsoConfig>,
    http: reqwest::Client,
    discovered: Discovered,
}

impl Provider {
    pub fn new(config: Arc<SsoConfig>) -> Self {
        // No redirects: a provider's endpoints answer directly (and a redirect could lead anywhere).
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(HTTP_TIMEOUT)
            .build()
            .expect("an HTTP client with rustls");
        Self { config, http, discovered: Arc::default() }
    }

    /// The client from discovery, read again once it is older than an hour; see the module for
    /// what a request gets while the provider is being asked or just failed.
    async fn client(&self) -> Result<Arc<Client>, ProviderError> {
        let running = {
            let mut state = self.discovered.lock().expect("discovery state");
            match &state.last {
                Some(Discovery::Ready(at, client)) if at.elapsed() < DISCOVERY_TTL => return Ok(client.clone()),
                Some(Discovery::Failed(at, why)) if at.elapsed() < FAILURE_TTL => {
                    return Err(ProviderError::Unavailable(format!("discovery failed moments ago: {why}")));
                }
                _ => {}
            }
            if state.running {
                return match &state.last {
                    Some(Discovery::Ready(_, client)) => Ok(client.clone()),
                    _ => Err(ProviderError::Unavailable("discovery under way for another request".to_owned())),
                };
            }
            state.running = true;
            Running(&self.discovered)
        };
        let discovered = self.discover().await;
        let mut state = self.discovered.lock().expect("discovery state");
        state.last = Some(match &discovered {
            Ok(client) => Discovery::Ready(Instant::now(), client.clone()),
            Err(error) => Discovery::Failed(Instant::now(), error.to_string()),
        });
        drop(state);
        drop(running);
        discovered
    }

    async fn discover(&self) -> Result<Arc<Client>, ProviderError> {
        let issuer =
            IssuerUrl::new(self.config.issuer.clone()).map_err(|e| ProviderError::Unavailable(e.to_string()))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| ProviderError::Unavailable(format!("discovery failed: {e}")))?;
        let redirect = RedirectUrl::new(self.config.redirect_uri.clone())
            .map_err(|e| ProviderError::Unavailable(e.to_string()))?;
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.clone()),
            Some(ClientSecret::new(self.config.client_secret.expose().to_owned())),
        )
        .set_redirect_uri(redirect);
        Ok(Arc::new(client))
    }

    /// A new authorization request: fresh state, nonce and PKCE verifier (256 bits each).
    pub async fn authorize(&self) -> Result<Authorization, ProviderError> {
        let client = self.client().await?;
        let (state, nonce) = (random_token(), random_token());
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (state_value, nonce_value) = (state.expose().to_owned(), nonce.expose().to_owned());
        let (url, _, _) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                move || CsrfToken::new(state_value),
                move || Nonce::new(nonce_value),
            )
            .add_scope(Scope::new("email".to_owned()))
            .add_scope(Scope::new("profile".to_owned()))
            .set_pkce_challenge(challenge)
            .url();
        let pkce_verifier = SecretString::new(verifier.secret().clone());
        Ok(Authorization { url: url.to_string(), state, nonce, pkce_verifier })
    }

    /// Exchanges the code and checks the ID token; `nonce_hash` is what the sign-in stored.
    pub async fn identify(
        &self,
        code: &str,
        pkce_verifier: &SecretString,
        nonce_hash: &str,
    ) -> Result<Identity, ProviderError> {
        let client = self.client().await?;
        let request = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| ProviderError::Unavailable(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.expose().to_owned()));
        let response = request.request_async(&self.http).await.map_err(|error| match error {
            RequestTokenError::ServerResponse(answer) => ProviderError::CodeRefused(answer.error().to_string()),
            RequestTokenError::Request(e) => ProviderError::Unavailable(format!("token endpoint: {e}")),
            RequestTokenError::Parse(e, body) if only_the_id_token_fails(&body) => {
                ProviderError::TokenRefused { reason: "claims", detail: e.to_string() }
            }
            RequestTokenError::Parse(e, _) => ProviderError::Unavailable(format!("token endpoint answer: {e}")),
            RequestTokenError::Other(e) => ProviderError::Unavailable(format!("token endpoint: {e}")),
        })?;
        let refused = |reason, detail: String| ProviderError::TokenRefused { reason, detail };
        let id_token = response.id_token().ok_or_else(|| refused("no_id_token", "no ID token".to_owned()))?;
        let skew = chrono::Duration::from_std(CLOCK_SKEW).expect("a small duration");
        let verifier = client
            .id_token_verifier()
            .set_time_fn(move || chrono::Utc::now() - skew)
            .set_issue_time_verifier_fn(move |issued| match issued > chrono::Utc::now() + skew {
                true => Err(format!("issued in the future ({issued})")),
                false => Ok(()),
            });
        let expected = nonce_hash.to_owned();
        let nonce_check = move |nonce: Option<&Nonce>| match nonce {
            Some(nonce) if bool::from(sha256_hex(nonce.secret()).as_bytes().ct_eq(expected.as_bytes())) => Ok(()),
            Some(_) => Err("the nonce is not this sign-in's".to_owned()),
            None => Err("no nonce".to_owned()),
        };
        let claims = id_token.claims(&verifier, nonce_check).map_err(|e| {
            use openidconnect::ClaimsVerificationError as E;
            let reason = match &e {
                E::InvalidAudience(_) => "audience",
                E::InvalidIssuer(_) => "issuer",
                E::Expired(_) => "expired",
                E::InvalidNonce(_) => "nonce",
                E::SignatureVerification(_) => "signature",
                _ => "claims",
            };
            refused(reason, e.to_string())
        })?;
        Ok(Identity {
            subject: claims.subject().as_str().to_owned(),
            email: claims.email().map(|e| e.as_str().to_owned()),
            email_verified: claims.email_verified() == Some(true),
            name: claims.name().and_then(|n| n.get(None)).map(|n| n.as_str().to_owned()),
        })
    }
}

/// Whether a token answer that did not parse reads once its ID token is left out: then the token's
/// claims are of the wrong type (`email_verified` as the string "true"), which is the provider's
/// token failing a check, not the provider down. (The crate reads the ID token inside a flattened
/// field, so the parse error carries no path to tell this by.)
fn only_the_id_token_fails(body: &[u8]) -> bool {
    let Ok(serde_json::Value::Object(mut answer)) = serde_json::from_slice(body) else { return false };
    answer.remove("id_token").is_some() && serde_json::from_value::<CoreTokenResponse>(answer.into()).is_ok()
}
