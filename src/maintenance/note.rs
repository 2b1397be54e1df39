//! A run's note: why a run, or one sweep in it, did not simply finish. Stored as codes
//! (`sessions:busy;codes:database_error:40001`); the catalogue puts them into words, and the
//! English sentence it reads as is what the API and the command line show.

use std::fmt;

use super::Kind;
use crate::db::UnknownCode;

/// Why a run, or one sweep in it, stopped short.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Another run holds the sweep's lease: a skip, not a shortfall.
    Busy,
    BatchCap,
    TimeCap,
    LeaseLost,
    DatabaseUnavailable,
    /// With the database's error code, when it gave one (never its message, which may quote data).
    DatabaseError(Option<String>),
    /// The run stopped without finishing (found stale by a later run).
    Abandoned,
    /// The run's lease ran out while it held it: its holder died.
    LeaseRanOut,
    /// The leftover sweep could not list or read the store.
    StorageError,
}

impl Reason {
    /// The stored code, without the database error's code.
    fn code(&self) -> &'static str {
        match self {
            Reason::Busy => "busy",
            Reason::BatchCap => "batch_cap",
            Reason::TimeCap => "time_cap",
            Reason::LeaseLost => "lease_lost",
            Reason::DatabaseUnavailable => "database_unavailable",
            Reason::DatabaseError(_) => "database_error",
            Reason::Abandoned => "abandoned",
            Reason::LeaseRanOut => "lease_ran_out",
            Reason::StorageError => "storage_error",
        }
    }

    /// The English the ledger wrote before it stored codes, and the API still answers.
    pub fn english(&self) -> String {
        let words = match self {
            Reason::Busy => "another run holds it",
            Reason::BatchCap => "stopped at the batch cap",
            Reason::TimeCap => "stopped at the time cap",
            Reason::LeaseLost => "lost its lease",
            Reason::DatabaseUnavailable => "database unavailable",
            Reason::DatabaseError(Some(code)) => return format!("database error {code}"),
            Reason::DatabaseError(None) => "database error",
            Reason::Abandoned => "abandoned: the run stopped without finishing",
            Reason::LeaseRanOut => "abandoned: its lease ran out",
            Reason::StorageError => "storage error",
        };
        words.to_owned()
    }

    fn parse(code: &str) -> Result<Self, UnknownCode> {
        let (name, detail) = match code.split_once(':') {
            Some((name, detail)) => (name, Some(detail)),
            None => (code, None),
        };
        let reason = match (name, detail) {
            ("busy", None) => Reason::Busy,
            ("batch_cap", None) => Reason::BatchCap,
            ("time_cap", None) => Reason::TimeCap,
            ("lease_lost", None) => Reason::LeaseLost,
            ("database_unavailable", None) => Reason::DatabaseUnavailable,
            ("database_error", detail) => Reason::DatabaseError(detail.map(str::to_owned)),
            ("abandoned", None) => Reason::Abandoned,
            ("lease_ran_out", None) => Reason::LeaseRanOut,
            ("storage_error", None) => Reason::StorageError,
            _ => return Err(UnknownCode { kind: "Reason", code: code.to_owned() }),
        };
        Ok(reason)
    }
}

/// One part of a note: the reason, and the sweep it concerns in a run of several.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotePart {
    pub sweep: Option<Kind>,
    pub reason: Reason,
}

/// A run's note. It reads (`Deref`, `Display`, JSON) as its English sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    parts: Vec<NotePart>,
    english: String,
}

impl Note {
    pub fn new(parts: Vec<NotePart>) -> Self {
        let english = parts
            .iter()
            .map(|p| match p.sweep {
                Some(kind) => format!("{kind}: {}", p.reason.english()),
                None => p.reason.english(),
            })
            .collect::<Vec<_>>()
            .join("; ");
        Self { parts, english }
    }

    /// A note of one reason, for the run as a whole.
    pub fn of(reason: Reason) -> Self {
        Self::new(vec![NotePart { sweep: None, reason }])
    }

    pub fn parts(&self) -> &[NotePart] {
        &self.parts
    }

    /// The stored form.
    pub fn code(&self) -> String {
        let part = |p: &NotePart| {
            let reason = match &p.reason {
                Reason::DatabaseError(Some(code)) => format!("database_error:{code}"),
                reason => reason.code().to_owned(),
            };
            match p.sweep {
                Some(kind) => format!("{kind}:{reason}"),
                None => reason,
            }
        };
        self.parts.iter().map(part).collect::<Vec<_>>().join(";")
    }

    pub fn parse(code: &str) -> Result<Self, UnknownCode> {
        let part = |part: &str| {
            let sweep = part.split_once(':').and_then(|(kind, _)| Kind::parse(kind).ok());
            let reason = match sweep {
                Some(kind) => &part[kind.code().len() + 1..],
                None => part,
            };
            Ok(NotePart { sweep, reason: Reason::parse(reason)? })
        };
        Ok(Self::new(code.split(';').map(part).collect::<Result<_, UnknownCode>>()?))
    }
}

impl std::ops::Deref for Note {
    type Target = str;

    fn deref(&self) -> &str {
        &self.english
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.english)
    }
}

impl serde::Serialize for Note {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.english)
    }
}

macro_rules! note_backend {
    ($db:ty) => {
        impl sqlx::Type<$db> for Note {
            fn type_info() -> <$db as sqlx::Database>::TypeInfo {
                <&str as sqlx::Type<$db>>::type_info()
            }
            fn compatible(ty: &<$db as sqlx::Database>::TypeInfo) -> bool {
                <&str as sqlx::Type<$db>>::compatible(ty)
            }
        }

        impl<'q> sqlx::Encode<'q, $db> for Note {
            fn encode_by_ref(
                &self,
                buf: &mut <$db as sqlx::Database>::ArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <String as sqlx::Encode<'q, $db>>::encode(self.code(), buf)
            }
        }

        impl<'r> sqlx::Decode<'r, $db> for Note {
            fn decode(value: <$db as sqlx::Database>::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                Ok(Self::parse(<&str as sqlx::Decode<'r, $db>>::decode(value)?)?)
            }
        }
    };
}

note_backend!(sqlx::Sqlite);
note_backend!(sqlx::Postgres);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_stored_as_codes_and_reads_as_the_english_sentence() {
        let note = Note::new(vec![
            NotePart { sweep: Some(Kind::ShareGc), reason: Reason::TimeCap },
            NotePart { sweep: Some(Kind::Sessions), reason: Reason::DatabaseError(Some("40001".into())) },
        ]);
        assert_eq!(note.code(), "share_gc:time_cap;sessions:database_error:40001");
        assert_eq!(&*note, "share_gc: stopped at the time cap; sessions: database error 40001");
        assert_eq!(Note::parse(&note.code()).unwrap(), note);
        assert_eq!(Note::parse("lease_ran_out").unwrap(), Note::of(Reason::LeaseRanOut));
        assert_eq!(Note::parse("database_error").unwrap(), Note::of(Reason::DatabaseError(None)));
    }

    #[test]
    fn an_unknown_reason_is_an_error_not_a_default() {
        assert!(Note::parse("sessions:something new").is_err());
        assert!(Note::parse("another run holds it").is_err());
    }
}
