//! Closed sets of codes stored as text (roles, statuses, event kinds): each becomes an enum that
//! binds as its code and decodes from it, and a stored value outside the set is a decoding error,
//! never a plausible default.

/// A stored code outside its enum's set.
#[derive(Debug, thiserror::Error)]
#[error("unknown {kind} code {code:?}")]
pub struct UnknownCode {
    pub kind: &'static str,
    pub code: String,
}

/// Declares an enum of stored codes: `code()`, `parse()` (an error on anything else), `ALL`,
/// `Display` and `Serialize` as the code, and sqlx `Type`, `Encode` and `Decode` on both backends,
/// so rows decode straight into it.
#[macro_export]
macro_rules! db_code {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $code:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name { $($(#[$vmeta])* $variant),+ }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: [Self; [$(stringify!($variant)),+].len()] = [$(Self::$variant),+];

            /// The code stored in the database.
            pub fn code(self) -> &'static str {
                match self { $(Self::$variant => $code),+ }
            }

            pub fn parse(code: &str) -> Result<Self, $crate::db::UnknownCode> {
                match code {
                    $($code => Ok(Self::$variant),)+
                    other => Err($crate::db::UnknownCode { kind: stringify!($name), code: other.to_owned() }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.code())
            }
        }

        /// A code equals its stored text, so checks against a row read as raw text stay short.
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.code() == *other
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.code() == other
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.code())
            }
        }

        $crate::db_code!(@backend $name, sqlx::Sqlite);
        $crate::db_code!(@backend $name, sqlx::Postgres);
    };
    (@backend $name:ident, $db:ty) => {
        impl sqlx::Type<$db> for $name {
            fn type_info() -> <$db as sqlx::Database>::TypeInfo {
                <&str as sqlx::Type<$db>>::type_info()
            }
            fn compatible(ty: &<$db as sqlx::Database>::TypeInfo) -> bool {
                <&str as sqlx::Type<$db>>::compatible(ty)
            }
        }

        impl<'q> sqlx::Encode<'q, $db> for $name {
            fn encode_by_ref(
                &self,
                buf: &mut <$db as sqlx::Database>::ArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <&str as sqlx::Encode<'q, $db>>::encode(self.code(), buf)
            }
        }

        impl<'r> sqlx::Decode<'r, $db> for $name {
            fn decode(value: <$db as sqlx::Database>::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                let code = <&str as sqlx::Decode<'r, $db>>::decode(value)?;
                Ok(Self::parse(code)?)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    db_code! {
        enum Colour { Red = "red", Blue = "blue" }
    }

    #[test]
    fn a_code_outside_the_set_is_an_error_not_a_default() {
        assert_eq!(Colour::parse("blue").unwrap(), Colour::Blue);
        assert_eq!(Colour::Red.code(), "red");
        let error = Colour::parse("green").unwrap_err();
        assert_eq!(error.to_string(), "unknown Colour code \"green\"");
        assert_eq!(Colour::ALL, [Colour::Red, Colour::Blue]);
        assert!(Colour::Red == "red" && Colour::Blue != "red");
    }
}
