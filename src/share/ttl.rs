//! How long a share stays downloadable, checked once against the shortest and the configured
//! longest validity, so the web form and the CLI accept exactly the same values.

use std::time::Duration;

/// Shortest validity a share may have: a link that dies at once is a mistake, not a feature.
pub const MIN_TTL: Duration = Duration::from_secs(60);

/// A validity between [`MIN_TTL`] and the configured maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShareTtl(Duration);

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TtlError {
    #[error("a share must be valid for at least one minute")]
    TooShort,
    #[error("is longer than the maximum of {}", crate::config::format_duration(*.0))]
    TooLong(Duration),
}

impl ShareTtl {
    pub fn parse(ttl: Duration, max: Duration) -> Result<Self, TtlError> {
        if ttl < MIN_TTL {
            Err(TtlError::TooShort)
        } else if ttl > max {
            Err(TtlError::TooLong(max))
        } else {
            Ok(Self(ttl))
        }
    }

    pub fn get(self) -> Duration {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{ShareTtl, TtlError};

    #[test]
    fn a_validity_outside_one_minute_to_the_maximum_is_refused() {
        let max = Duration::from_secs(7 * 86_400);
        assert_eq!(ShareTtl::parse(Duration::from_secs(59), max), Err(TtlError::TooShort));
        assert_eq!(ShareTtl::parse(max + Duration::from_secs(1), max), Err(TtlError::TooLong(max)));
        assert_eq!(ShareTtl::parse(Duration::from_secs(60), max).unwrap().get(), Duration::from_secs(60));
        assert_eq!(ShareTtl::parse(max, max).unwrap().get(), max);
    }
}
