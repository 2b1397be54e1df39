//! The sender's message to the recipient: parsed once, with its one length rule, so the
//! dashboard form and `watasu share create --message` cannot drift apart.

/// Longest message, in characters (what a phone screen can still show as a note).
pub const MESSAGE_LIMIT: usize = 2000;

/// A message that has passed the rule: without invisible format characters, trimmed, at most
/// `MESSAGE_LIMIT` characters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the message is {chars} characters long; at most {MESSAGE_LIMIT} are allowed")]
pub struct MessageTooLong {
    pub chars: usize,
}

impl Message {
    /// Strips invisible characters (bidi controls could disguise a name), trims the text, and
    /// refuses it when it is longer than the limit.
    pub fn parse(text: &str) -> Result<Self, MessageTooLong> {
        let visible = crate::text::strip_invisible_keeping_lines(text);
        let trimmed = visible.trim();
        let chars = trimmed.chars().count();
        if chars > MESSAGE_LIMIT {
            return Err(MessageTooLong { chars });
        }
        Ok(Self(trimmed.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_inner(self) -> String {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_at_the_limit_is_kept_trimmed_and_one_over_is_refused() {
        let at_limit = "あ".repeat(MESSAGE_LIMIT);
        assert_eq!(Message::parse(&format!("  {at_limit}\n")).unwrap().as_str(), at_limit);
        let over = "あ".repeat(MESSAGE_LIMIT + 1);
        assert_eq!(Message::parse(&over), Err(MessageTooLong { chars: MESSAGE_LIMIT + 1 }));
    }
}
