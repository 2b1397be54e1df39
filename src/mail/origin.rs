//! What every mail watasu sends says about where it comes from: the From mailbox, a Message-ID
//! in watasu's own domain, and `Auto-Submitted` so that vacation responders stay quiet.

use lettre::message::{
    Mailbox, MessageBuilder,
    header::{Header, HeaderName, HeaderValue},
};

/// The sending side of every mail: one per server, built from the settings.
#[derive(Clone, Debug)]
pub struct MailOrigin {
    from: Mailbox,
    /// The host of `WATASU_BASE_URL`: Message-IDs must be unique in a domain the server owns.
    host: String,
}

impl MailOrigin {
    pub fn new(from: Mailbox, base_url: &url::Url) -> Self {
        // An IPv6 host keeps its brackets: `[::1]` is a valid domain literal in a Message-ID.
        let host = base_url.host_str().unwrap_or("localhost").to_owned();
        Self { from, host }
    }

    /// A message to one address with the headers every mail carries. Reply-To is the caller's:
    /// only some mails have a person to answer.
    pub fn builder(&self, to: &str, subject: impl Into<String>) -> anyhow::Result<MessageBuilder> {
        self.builder_from(self.from.clone(), to, subject)
    }

    /// [`MailOrigin::builder`] with a person's name in the From display name, beside ours
    /// ("佐藤 花子 (watasu)"): the recipient sees who the mail is from, while the address stays
    /// the server's own (only it may send from there). `person` must be fit for a header already.
    pub fn builder_as(&self, person: &str, to: &str, subject: impl Into<String>) -> anyhow::Result<MessageBuilder> {
        let name = match &self.from.name {
            Some(ours) if !ours.is_empty() => format!("{person} ({ours})"),
            _ => person.to_owned(),
        };
        self.builder_from(Mailbox::new(Some(name), self.from.email.clone()), to, subject)
    }

    fn builder_from(&self, from: Mailbox, to: &str, subject: impl Into<String>) -> anyhow::Result<MessageBuilder> {
        Ok(lettre::Message::builder()
            .from(from)
            .to(to.parse()?)
            .subject(subject)
            .message_id(Some(self.new_message_id()))
            .header(AutoSubmitted))
    }

    /// `<random@host>`: random, so it tells nothing about the share, the link or the code.
    fn new_message_id(&self) -> String {
        let mut bytes = [0u8; 16];
        rand::Rng::fill_bytes(&mut rand::rng(), &mut bytes);
        format!("<{}@{}>", hex::encode(bytes), self.host)
    }
}

/// `Auto-Submitted: auto-generated` (RFC 3834): a machine wrote this mail, so automatic replies
/// (out of office, vacation) must not answer it and cannot loop back.
#[derive(Clone, Copy, Debug)]
struct AutoSubmitted;

impl Header for AutoSubmitted {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("Auto-Submitted")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self)
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "auto-generated".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(base: &str) -> MailOrigin {
        MailOrigin::new("watasu <w@example.test>".parse().unwrap(), &base.parse().unwrap())
    }

    fn headers(origin: &MailOrigin) -> String {
        let message = origin.builder("r@example.test", "hello").unwrap().body(String::from("body")).unwrap();
        let raw = String::from_utf8(message.formatted()).unwrap();
        raw.split_once("\r\n\r\n").unwrap().0.to_owned()
    }

    fn message_id(headers: &str) -> &str {
        headers.lines().find_map(|l| l.strip_prefix("Message-ID: ")).expect("a Message-ID")
    }

    #[test]
    fn every_mail_is_auto_generated_with_a_fresh_message_id_in_the_base_urls_domain() {
        let origin = origin("https://files.example.com:8443/watasu/");
        let (first, second) = (headers(&origin), headers(&origin));
        assert!(first.lines().any(|l| l == "Auto-Submitted: auto-generated"), "{first}");
        let id = message_id(&first);
        let local =
            id.strip_prefix('<').and_then(|i| i.strip_suffix("@files.example.com>")).unwrap_or_else(|| panic!("{id}"));
        assert_eq!(local.len(), 32);
        assert!(local.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert_ne!(id, message_id(&second), "two mails share a Message-ID");
    }

    #[test]
    fn an_ipv6_base_url_gives_a_domain_literal() {
        assert!(message_id(&headers(&origin("http://[::1]:8080/"))).ends_with("@[::1]>"));
    }
}
