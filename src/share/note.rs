//! A secret note: a few lines handed over instead of files (a password, an account number, a door
//! code). It is sealed in the handover's row ([`RowSeal`], the handover id bound in), shown only to
//! the session that claimed a share, and destroyed by the GC once no share needs it.

use crate::{
    row_seal::RowSeal,
    secret::{SecretKey, SecretString},
};

/// Longest note, in bytes of UTF-8: a few KiB is plenty for a secret and fits one phone screen.
pub const NOTE_LIMIT: usize = 4096;

/// A note that has passed the rule: not empty, at most [`NOTE_LIMIT`] bytes. Kept exactly as typed
/// but for surrounding line breaks: a password may begin or end with a space.
#[derive(Debug)]
pub struct Note(SecretString);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NoteError {
    #[error("the note is empty")]
    Empty,
    #[error("the note is {bytes} bytes long; at most {NOTE_LIMIT} are allowed")]
    TooLong { bytes: usize },
}

impl Note {
    pub fn parse(text: &str) -> Result<Self, NoteError> {
        let text = text.trim_matches(['\r', '\n']);
        if text.trim().is_empty() {
            return Err(NoteError::Empty);
        }
        if text.len() > NOTE_LIMIT {
            return Err(NoteError::TooLong { bytes: text.len() });
        }
        Ok(Self(SecretString::new(text)))
    }

    pub fn expose(&self) -> &str {
        self.0.expose()
    }
}

/// Seals and opens the notes of handovers.
#[derive(Clone, Debug)]
pub struct NoteSeal(RowSeal);

impl NoteSeal {
    pub fn derive(secret: &SecretKey) -> Self {
        Self(RowSeal::derive(secret, "watasu handover note v1"))
    }

    pub fn seal(&self, handover_id: i64, note: &Note) -> Vec<u8> {
        self.0.seal(handover_id, note.expose().as_bytes())
    }

    /// The note, or `None` when it does not open (the secret key changed, or the row was altered).
    pub fn open(&self, handover_id: i64, sealed: &[u8]) -> Option<SecretString> {
        String::from_utf8(self.0.open(handover_id, sealed)?).ok().map(SecretString::new)
    }
}

/// A note to seal into the handover that is being created (its id is known only then).
#[derive(Debug)]
pub struct NoteToSeal {
    pub seal: NoteSeal,
    pub note: Note,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_keeps_its_spaces_and_must_be_neither_empty_nor_over_the_limit() {
        assert_eq!(Note::parse("\r\n pass word \n").unwrap().expose(), " pass word ");
        assert_eq!(Note::parse(" \n ").unwrap_err(), NoteError::Empty);
        assert!(Note::parse(&"あ".repeat(NOTE_LIMIT / 3)).is_ok());
        assert_eq!(Note::parse(&"a".repeat(NOTE_LIMIT + 1)).unwrap_err(), NoteError::TooLong { bytes: NOTE_LIMIT + 1 });
    }
}
