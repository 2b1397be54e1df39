//! One delivery attempt: a signed POST to the address the guard checked, and nowhere else — the
//! name is pinned to that address, no redirect is followed and no proxy is used. The answer's
//! body is never read: only its status is kept.

use std::time::Duration;

use super::{
    guard::{LOOKUP_TIMEOUT, Target},
    outbox::Failure,
    signing::{WebhookSecret, signature_header},
};

/// Connecting, and then the whole exchange, each end after this long.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The longest one attempt may take, whatever part of it hangs: reading the endpoint's secrets,
/// looking its name up (at most [`LOOKUP_TIMEOUT`]) and the POST (at most [`TIMEOUT`]). The
/// delivery cuts an attempt here, so that no attempt outlives it.
pub const ATTEMPT_DEADLINE: Duration = Duration::from_secs(LOOKUP_TIMEOUT.as_secs() + TIMEOUT.as_secs() + 5);

/// Posts `body` as message `message_id`, signed with `secrets`; answers the 2xx status, or why it
/// failed.
pub async fn post(target: &Target, message_id: &str, body: &str, secrets: &[WebhookSecret]) -> Result<u16, Failure> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(TIMEOUT)
        .timeout(TIMEOUT)
        .resolve(&target.host, target.addr)
        .user_agent("watasu-webhooks")
        .build()
        .map_err(|_| Failure { status: None, error: "client setup failed".to_owned() })?;
    let timestamp = chrono::Utc::now().timestamp();
    let answer = client
        .post(target.url.clone())
        .header("content-type", "application/json")
        .header("webhook-id", message_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature_header(secrets, message_id, timestamp, body))
        .body(body.to_owned())
        .send()
        .await;
    match answer {
        Ok(response) if response.status().is_success() => Ok(response.status().as_u16()),
        Ok(response) => {
            let status = response.status().as_u16();
            let error = if response.status().is_redirection() {
                format!("http {status} (redirects are not followed)")
            } else {
                format!("http {status}")
            };
            Err(Failure { status: Some(i32::from(status)), error })
        }
        Err(error) if error.is_timeout() => Err(Failure { status: None, error: "timed out".to_owned() }),
        Err(error) if error.is_connect() => Err(Failure { status: None, error: "could not connect".to_owned() }),
        Err(_) => Err(Failure { status: None, error: "request failed".to_owned() }),
    }
}
