//! Test shares from one builder, after docs.rs's `fake_release()`: a test names only what matters
//! to it (`app.fake_share().sender(id).file("a.txt", b"a").create().await`), and the share is
//! created through the same code path as the CLI and the dashboard.

use std::time::Duration;

use watasu::{
    accounts::EmailAddress,
    i18n::Lang,
    share::{
        Message,
        create::{FileContent, FileRequest, HandoverRequest, create_handover},
        note::{Note, NoteSeal, NoteToSeal},
    },
};

use super::{RECIPIENT, TestApp, rand_suffix};

/// A share a test made.
#[derive(Clone, Debug)]
pub struct TestShare {
    pub id: i64,
    pub token: String,
    pub sender_id: i64,
}

/// A handover still being described: by default a one-hour share of one small file for
/// [`RECIPIENT`] from a fresh sender, with a message, notifying its sender of the download.
/// Naming files or recipients replaces the default one; naming more adds to them.
pub struct FakeShare<'a> {
    app: &'a TestApp,
    sender: Option<i64>,
    recipients: Vec<&'a str>,
    files: Vec<(&'a str, &'static [u8])>,
    note: Option<&'a str>,
    content_type: &'a str,
    ttl: Duration,
    message: &'a str,
    notify_on_download: bool,
    allow_reply: bool,
}

impl TestApp {
    /// A share to describe, then [`FakeShare::create`].
    pub fn fake_share(&self) -> FakeShare<'_> {
        FakeShare {
            app: self,
            sender: None,
            recipients: Vec::new(),
            files: Vec::new(),
            note: None,
            content_type: "application/octet-stream",
            ttl: Duration::from_secs(3600),
            message: "Here is the file.",
            notify_on_download: true,
            allow_reply: false,
        }
    }

    /// A one-hour share of a small text file from a fresh sender to Recipient@Example.test.
    pub async fn create_share(&self) -> TestShare {
        self.fake_share().recipient("Recipient@Example.test").create().await
    }
}

impl<'a> FakeShare<'a> {
    pub fn sender(mut self, sender_id: i64) -> Self {
        self.sender = Some(sender_id);
        self
    }

    /// A recipient (the first replaces the default; each gets a share).
    pub fn recipient(mut self, email: &'a str) -> Self {
        self.recipients.push(email);
        self
    }

    /// A file (the first replaces the default; the handover holds them in this order).
    pub fn file(mut self, name: &'a str, content: &'static [u8]) -> Self {
        self.files.push((name, content));
        self
    }

    /// A secret note, handed over instead of the default file.
    pub fn note(mut self, text: &'a str) -> Self {
        self.note = Some(text);
        self
    }

    pub fn content_type(mut self, content_type: &'a str) -> Self {
        self.content_type = content_type;
        self
    }

    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    pub fn message(mut self, message: &'a str) -> Self {
        self.message = message;
        self
    }

    /// The recipients may reply with files.
    pub fn allow_reply(mut self) -> Self {
        self.allow_reply = true;
        self
    }

    pub fn quiet(mut self) -> Self {
        self.notify_on_download = false;
        self
    }

    /// The request the dashboard would make for it, from `sender_id`, for a test that calls
    /// `create_handover` itself (to see it refused).
    pub fn request(&self, sender_id: i64) -> HandoverRequest<'a> {
        let recipients = if self.recipients.is_empty() { vec![RECIPIENT] } else { self.recipients.clone() };
        let files = if self.files.is_empty() && self.note.is_none() {
            vec![("report.txt", &b"the file contents\n"[..])]
        } else {
            self.files.clone()
        };
        HandoverRequest {
            sender_id,
            recipients: recipients.into_iter().map(|r| EmailAddress::parse(r).unwrap()).collect(),
            files: files
                .into_iter()
                .map(|(name, content)| FileRequest {
                    name: name.to_owned(),
                    content_type: self.content_type.to_owned(),
                    content: FileContent::Stream(Box::pin(content)),
                })
                .collect(),
            note: self.note.map(|text| NoteToSeal { seal: note_seal(), note: Note::parse(text).unwrap() }),
            max_bytes: u64::MAX,
            ttl: self.ttl,
            message: Message::parse(self.message).unwrap(),
            lang: Lang::En,
            notify_on_download: self.notify_on_download,
            name_file_in_mail: true,
            scan: false,
            allow_reply: self.allow_reply,
        }
    }

    /// Stores the files and creates the handover (and its sender, if none was named): the share
    /// of its first recipient.
    pub async fn create(self) -> TestShare {
        self.create_all().await.remove(0)
    }

    /// The same, answering every recipient's share in the order they were named.
    pub async fn create_all(self) -> Vec<TestShare> {
        let app = self.app;
        let sender_id = match self.sender {
            Some(id) => id,
            None => app.create_sender(&format!("sender-{}@example.test", rand_suffix()), "Sender Sato").await,
        };
        let issued =
            create_handover(&app.state.shares.links, app.state.store.as_ref(), self.request(sender_id)).await.unwrap();
        issued
            .into_iter()
            .map(|share| TestShare { id: share.share_id, token: share.token.expose().to_owned(), sender_id })
            .collect()
    }
}

/// The notes' seal of every test app (they share one secret key).
pub fn note_seal() -> NoteSeal {
    NoteSeal::derive(&watasu::secret::SecretKey::from_hex(&super::test_secret_key()).unwrap())
}
