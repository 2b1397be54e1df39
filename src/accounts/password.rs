//! Sender passwords: argon2id with the library's defaults (m=19 MiB, t=2, p=1, OWASP's minimum),
//! hashed on a blocking thread so a burst of logins never stalls other requests.

use argon2::{Argon2, PasswordHasher, PasswordVerifier, password_hash::phc::PasswordHash};

use crate::secret::SecretString;

pub mod breached;

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
    #[error("password is too common or too easy to guess")]
    TooGuessable,
    #[error("password appears in lists of passwords leaked from other sites; choose another")]
    Breached,
}

/// Checks a new password: long enough, never truncated, no composition rules, not in the list of
/// breached passwords (ASVS 6.2.12), and not common or easily guessed (zxcvbn, with the person's
/// own email and name counted as guessable). Every path that takes a new password calls this.
pub fn check_new_password(password: &SecretString, user_inputs: &[&str]) -> Result<(), PasswordRuleError> {
    let chars = password.expose().chars().count();
    if chars < MIN_PASSWORD_CHARS {
        return Err(PasswordRuleError::TooShort);
    }
    if chars > MAX_PASSWORD_CHARS {
        return Err(PasswordRuleError::TooLong);
    }
    if breached::is_breached(password.expose()) {
        return Err(PasswordRuleError::Breached);
    }
    if zxcvbn::zxcvbn(password.expose(), user_inputs).score() < zxcvbn::Score::Three {
        return Err(PasswordRuleError::TooGuessable);
    }
    Ok(())
}

/// Words of a person's address and name that a password must not lean on.
pub fn personal_words(email: &str, name: &str) -> Vec<String> {
    let local = email.split('@').next().unwrap_or(email);
    let mut words = vec![email.to_lowercase(), local.to_lowercase(), name.to_lowercase()];
    words.extend(local.split(['.', '_', '-', '+']).chain(name.split_whitespace()).map(str::to_lowercase));
    words.retain(|w| w.chars().count() >= 3);
    words
}

/// A fixed argon2id hash verified against when no account matches, so an unknown address takes
/// as long as a wrong password.
pub fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        Argon2::default()
            .hash_password(b"watasu dummy password for timing")
            .map(|hash| hash.to_string())
            .expect("hashing a constant")
    })
}

/// Runs an argon2 computation on a blocking thread, at most one per core at a time: each takes
/// 19 MiB, and a burst of sign-ins would otherwise hold that much per attempt at once (more
/// threads than cores only queue anyway).
async fn on_hashing_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    static PERMITS: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    let permits = PERMITS.get_or_init(|| {
        tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, std::num::NonZero::get))
    });
    let _permit = permits.acquire().await.expect("the semaphore is never closed");
    tokio::task::spawn_blocking(move || {
        let _counted = in_flight::Counted::new();
        work()
    })
    .await
}

/// How many hashes run at once, watched by the tests.
mod in_flight {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static NOW: AtomicUsize = AtomicUsize::new(0);
    pub static PEAK: AtomicUsize = AtomicUsize::new(0);

    pub struct Counted;

    impl Counted {
        pub fn new() -> Self {
            let now = NOW.fetch_add(1, Ordering::AcqRel) + 1;
            PEAK.fetch_max(now, Ordering::AcqRel);
            Self
        }
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            NOW.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Hashes a password into an argon2id PHC string.
pub async fn hash_password(password: SecretString) -> anyhow::Result<String> {
    on_hashing_thread(move || {
        Argon2::default()
            .hash_password(password.expose().as_bytes())
            .map(|hash| hash.to_string())
            .map_err(|e| anyhow::anyhow!("hashing the password: {e}"))
    })
    .await?
}

/// True when `password` matches the PHC string `hash`.
pub async fn verify_password(password: SecretString, hash: String) -> bool {
    on_hashing_thread(move || {
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_burst_of_hashes_runs_at_most_one_per_core_at_a_time() {
        let cores = std::thread::available_parallelism().unwrap().get();
        let burst: Vec<_> = (0..4 * cores + 4)
            .map(|_| tokio::spawn(verify_password(SecretString::new("a guess"), dummy_hash().to_owned())))
            .collect();
        for attempt in burst {
            assert!(!attempt.await.unwrap());
        }
        let peak = in_flight::PEAK.load(std::sync::atomic::Ordering::Acquire);
        assert!((1..=cores).contains(&peak), "{peak} hashes ran at once on {cores} cores");
    }

    #[test]
    fn length_rules_count_characters_not_bytes() {
        assert_eq!(check_new_password(&SecretString::new("short"), &[]), Err(PasswordRuleError::TooShort));
        assert_eq!(check_new_password(&SecretString::new("川沿いの赤い自転車と古い時計台"), &[]), Ok(()));
        assert_eq!(check_new_password(&SecretString::new("x".repeat(1025)), &[]), Err(PasswordRuleError::TooLong));
    }

    #[test]
    fn breached_passwords_are_refused_as_such_however_they_are_spaced_or_capitalised() {
        for listed in ["correct horse battery staple", "Correct Horse Battery Staple", "password1234", "qwertyuiop123"]
        {
            assert_eq!(
                check_new_password(&SecretString::new(listed), &[]),
                Err(PasswordRuleError::Breached),
                "{listed}"
            );
        }
    }

    #[test]
    fn common_or_personal_passwords_are_refused_whatever_their_length() {
        // Not in the breached list: zxcvbn's patterns and word lists refuse them.
        for weak in ["zzzzzzzzzzzzzzzzzzz", "qwertyqwertyqwertyq", "98765432109876", "passwordpasswordpass"] {
            assert_eq!(
                check_new_password(&SecretString::new(weak), &[]),
                Err(PasswordRuleError::TooGuessable),
                "{weak}"
            );
        }
        let personal = SecretString::new("hanako.sato2026");
        let words = personal_words("hanako.sato@example.jp", "Hanako Sato");
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        assert_eq!(check_new_password(&personal, &words), Err(PasswordRuleError::TooGuessable));
    }

    #[test]
    fn a_128_character_passphrase_is_accepted_whole() {
        let long: String = "correct horse battery staple ".repeat(5).chars().take(128).collect();
        assert_eq!(check_new_password(&SecretString::new(long), &[]), Ok(()));
    }
}
