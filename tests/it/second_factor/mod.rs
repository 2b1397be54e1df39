//! The second factor after a password: TOTP codes (within one step, each once, throttled like
//! passwords), recovery codes (each once), the pending sign-in (it expires, it reaches nothing, it
//! ends on a new session id), the team's policy walking an account through set-up, an admin's
//! reset and the command line's. Codes are computed from the key the set-up page shows, as an
//! authenticator app does.

mod client;
mod reset;
mod set_up;
mod sign_in;

pub use self::client::{code, room_in_this_step, sender_with_app};
