//! A secret note: a few lines handed over instead of files (a password, an account number, a door
//! code). It is sealed in the handover's row under a random key of its own ([`RowSeal`], the
//! handover id bound in), kept beside it wrapped under a key derived from the instance secret; it
//! is shown only to the session that claimed a share, and the GC destroys key and note together
//! once no share needs it. With the key gone, any copy of the note's ciphertext that outlived the
//! row (a freed database page, a row version not vacuumed yet) opens with nothing, the instance
//! secret included.

use rand::Rng;

use crate::{
    row_seal::RowSeal,
    secret::{Purpose, SecretKey, SecretString},
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

/// A note as its handover's row keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedNote {
    pub handover_id: i64,
    /// The note, sealed under its own key (or, before migration 0051, under the instance secret's).
    pub sealed: Vec<u8>,
    /// The note's own key, wrapped; `None` for a note sealed before notes had keys of their own.
    pub wrapped_key: Option<Vec<u8>>,
}

/// Seals and opens the notes of handovers.
#[derive(Clone, Debug)]
pub struct NoteSeal {
    /// Wraps each note's own key.
    wrap: RowSeal,
    /// Opens the notes sealed before each had a key of its own, until they end.
    before: RowSeal,
}

impl NoteSeal {
    pub fn derive(secret: &SecretKey) -> Self {
        Self {
            wrap: RowSeal::derive(secret, Purpose::NoteKeyWrap),
            before: RowSeal::derive(secret, Purpose::NoteBeforeOwnKeys),
        }
    }

    /// The note sealed under a new random key, and that key wrapped.
    pub fn seal(&self, handover_id: i64, note: &Note) -> SealedNote {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        let sealed = RowSeal::with_key(&key).seal(handover_id, note.expose().as_bytes());
        let wrapped_key = Some(self.wrap.seal(handover_id, &key));
        SealedNote { handover_id, sealed, wrapped_key }
    }

    /// The note, or `None` when it does not open (the secret key changed, or the row was altered).
    pub fn open(&self, note: &SealedNote) -> Option<SecretString> {
        let plain = match &note.wrapped_key {
            Some(wrapped) => {
                let key: [u8; 32] = self.wrap.open(note.handover_id, wrapped)?.try_into().ok()?;
                RowSeal::with_key(&key).open(note.handover_id, &note.sealed)?
            }
            None => self.before.open(note.handover_id, &note.sealed)?,
        };
        String::from_utf8(plain).ok().map(SecretString::new)
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

    fn seal_of(byte: &str) -> NoteSeal {
        NoteSeal::derive(&SecretKey::from_hex(&byte.repeat(32)).unwrap())
    }

    #[test]
    fn each_note_has_its_own_key_and_opens_only_with_it_its_handover_and_the_instance_key() {
        let (seal, other) = (seal_of("ab"), seal_of("cd"));
        let note = Note::parse("door 4711").unwrap();
        let sealed = seal.seal(7, &note);
        let again = seal.seal(7, &note);
        assert_ne!(sealed.wrapped_key, again.wrapped_key, "two notes share a key");
        assert!(!sealed.sealed.windows(4).any(|w| w == b"4711"));
        assert_eq!(seal.open(&sealed).unwrap().expose(), "door 4711");
        assert!(other.open(&sealed).is_none(), "opened under another instance key");
        assert!(seal.open(&SealedNote { handover_id: 8, ..sealed.clone() }).is_none(), "opened in another handover");
        let keyless = SealedNote { wrapped_key: None, ..sealed.clone() };
        assert!(seal.open(&keyless).is_none(), "a note whose key is gone opened");
        let swapped = SealedNote { wrapped_key: again.wrapped_key, ..sealed };
        assert!(seal.open(&swapped).is_none(), "a note opened under another note's key");
    }

    #[test]
    fn a_note_sealed_before_notes_had_their_own_keys_still_opens() {
        let secret = SecretKey::from_hex(&"ab".repeat(32)).unwrap();
        let old = RowSeal::derive(&secret, Purpose::NoteBeforeOwnKeys).seal(7, b"door 4711");
        let note = SealedNote { handover_id: 7, sealed: old, wrapped_key: None };
        assert_eq!(NoteSeal::derive(&secret).open(&note).unwrap().expose(), "door 4711");
    }
}
