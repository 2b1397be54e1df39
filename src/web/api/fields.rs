//! The values a new handover and a new file request share, read as the API takes them: each
//! refused one is a 422 naming its field.

use std::time::Duration;

use super::problem::ApiError;
use crate::{accounts::User, i18n::Lang, share::ShareTtl};

/// A refused value: 422 naming its field.
pub fn invalid(field: &str, error: impl std::fmt::Display) -> ApiError {
    ApiError::unprocessable(format!("{field}: {error}"))
}

/// `ttl` as typed (`7d`, `12h`, …) up to `max`; `default` without it.
pub fn ttl(text: Option<&str>, default: Duration, max: Duration) -> Result<ShareTtl, ApiError> {
    let ttl = match text {
        Some(text) => crate::config::parse_duration(text).map_err(|e| invalid("ttl", e))?,
        None => default,
    };
    ShareTtl::parse(ttl, max).map_err(|e| invalid("ttl", e))
}

/// `lang` as a code (`en`, `ja`); the owner's without it.
pub fn lang(code: Option<&str>, owner: &User) -> Result<Lang, ApiError> {
    code.map_or(Ok(owner.lang), |code| Lang::from_code(code).ok_or_else(|| invalid("lang", code)))
}
