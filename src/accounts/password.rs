//! Sender passwords: argon2id with the library's defaults (m=19 MiB, t=2, p=1, OWASP's minimum),
//! hashed on a blocking thread so a burst of logins never stalls other requests.

use argon2::{Argon2, PasswordHasher, PasswordVerifier, password_hash::phc::PasswordHash};

use crate::secret::SecretString;

/// Shortest accepted password; long passphrases beat composition rules.
pub const MIN_PASSWORD_CHARS: usize = 12;
/// Longest accepted password: generous for passphrases, bounded so hashing stays cheap.
pub const MAX_PASSWORD_CHARS: usize = 1024;

/// Why a new password was refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PasswordRuleError {
    #[error("password is shorter than {MIN_PASSWORD_CHARS} characters")]
    TooShort,
    #[error("password is longer than {MAX_PASSWORD_CHARS} characters")]
    TooLong,
}

/// Checks a new password against the length rules (never truncated, no composition rules).
pub fn check_new_password(password: &SecretString) -> Result<(), PasswordRuleError> {
    let chars = password.expose().chars().count();
    if chars < MIN_PASSWORD_CHARS {
        Err(PasswordRuleError::TooShort)
    } else if chars > MAX_PASSWORD_CHARS {
        Err(PasswordRuleError::TooLong)
    } else {
        Ok(())
    }
}

/// Hashes a password into an argon2id PHC string.
pub async fn hash_password(password: SecretString) -> anyhow::Result<String> {
    tokio::task::spawn_blocking(move || {
        Argon2::default()
            .hash_password(password.expose().as_bytes())
            .map(|hash| hash.to_string())
            .map_err(|e| anyhow::anyhow!("hashing the password: {e}"))
    })
    .await?
}

/// True when `password` matches the PHC string `hash`.
pub async fn verify_password(password: SecretString, hash: String) -> bool {
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash)
            .map(|parsed| Argon2::default().verify_password(password.expose().as_bytes(), &parsed).is_ok())
            .unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hashed_password_verifies_and_a_wrong_one_does_not() {
        let hash = hash_password(SecretString::new("correct horse battery")).await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password(SecretString::new("correct horse battery"), hash.clone()).await);
        assert!(!verify_password(SecretString::new("correct horse batterz"), hash).await);
    }

    #[test]
    fn length_rules_count_characters_not_bytes() {
        assert_eq!(check_new_password(&SecretString::new("short")), Err(PasswordRuleError::TooShort));
        assert_eq!(check_new_password(&SecretString::new("ながいパスワードですよね")), Ok(()));
        assert_eq!(check_new_password(&SecretString::new("x".repeat(1025))), Err(PasswordRuleError::TooLong));
    }
}
