//! What a message says. Its JSON is built once, when the message is made, and sent as is on every
//! attempt (the signature covers it). It names the share, its handover, the recipient's address
//! and the files' names, sizes and SHA-256 digests — never a link token, a code, a session, the
//! sender's note or message, nor any file content. The README's "Webhooks" section shows it.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::EventType;

/// One file of the handover, as a message names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, sqlx::FromRow)]
pub struct FileFacts {
    pub name: String,
    pub size: i64,
    pub sha256: String,
    /// Its place in the handover (an event about one file names it by this).
    #[serde(skip)]
    pub position: i32,
}

/// The share a message is about.
#[derive(Clone, Debug, Serialize)]
pub struct ShareFacts {
    pub share_id: i64,
    pub handover_id: i64,
    /// `delivery` (files to a recipient) or `request` (files asked of them).
    pub share_kind: String,
    pub recipient: String,
    pub files: Vec<FileFacts>,
    /// The one file the event is about (the one the scan refused), when it is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<FileFacts>,
}

#[derive(Serialize)]
struct Envelope<'a, D: Serialize> {
    #[serde(rename = "type")]
    event_type: &'a str,
    timestamp: String,
    data: D,
}

fn envelope<D: Serialize>(event_type: EventType, at: DateTime<Utc>, data: D) -> String {
    let timestamp = at.to_rfc3339_opts(SecondsFormat::Millis, true);
    serde_json::to_string(&Envelope { event_type: event_type.code(), timestamp, data }).expect("plain data")
}

/// The body of a message about a share: `{"type", "timestamp", "data": {…}}`.
pub fn about_share(event_type: EventType, at: DateTime<Utc>, share: &ShareFacts) -> String {
    envelope(event_type, at, share)
}

/// The body of a test message: it names only the endpoint.
pub fn test(endpoint_id: i64, at: DateTime<Utc>) -> String {
    #[derive(Serialize)]
    struct Test {
        endpoint_id: i64,
    }
    envelope(EventType::Test, at, Test { endpoint_id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_message_has_type_timestamp_and_data_with_its_files() {
        let file = FileFacts { name: "a.pdf".into(), size: 3, sha256: "ab".into(), position: 0 };
        let share = ShareFacts {
            share_id: 7,
            handover_id: 5,
            share_kind: "delivery".into(),
            recipient: "r@example.test".into(),
            files: vec![file],
            file: None,
        };
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let body: serde_json::Value =
            serde_json::from_str(&about_share(EventType::ShareDownloaded, at, &share)).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "type": "share.downloaded",
                "timestamp": "2023-11-14T22:13:20.000Z",
                "data": {
                    "share_id": 7, "handover_id": 5, "share_kind": "delivery", "recipient": "r@example.test",
                    "files": [{ "name": "a.pdf", "size": 3, "sha256": "ab" }]
                }
            })
        );
    }
}
