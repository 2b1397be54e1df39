//! A sender's display name: what recipients see as "from", so it is cleaned and checked once,
//! the same way for the setup page, an invitation, and `watasu user add`.

/// Longest display name, in characters.
const MAX_CHARS: usize = 100;

/// 1 to 100 printable characters, without invisible ones (bidirectional controls, zero-width)
/// and surrounding spaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisplayName(String);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("a name must be 1 to {MAX_CHARS} printable characters")]
pub struct InvalidName;

impl DisplayName {
    pub fn parse(raw: &str) -> Result<Self, InvalidName> {
        let name = crate::text::strip_invisible(raw).trim().to_owned();
        if name.is_empty() || name.chars().count() > MAX_CHARS || name.chars().any(char::is_control) {
            return Err(InvalidName);
        }
        Ok(Self(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::{DisplayName, InvalidName};

    #[test]
    fn a_name_is_cleaned_of_invisible_characters_and_spaces_then_checked() {
        assert_eq!(DisplayName::parse("  Ali\u{200b}ce \u{202e}").unwrap().as_str(), "Alice");
        assert_eq!(DisplayName::parse(" \u{200b} "), Err(InvalidName));
        assert_eq!(DisplayName::parse(&"名".repeat(100)).unwrap().as_str().chars().count(), 100);
        assert_eq!(DisplayName::parse(&"名".repeat(101)), Err(InvalidName));
    }
}
