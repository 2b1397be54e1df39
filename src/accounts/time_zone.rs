//! The time zone a sender reads times in: an IANA name (`Europe/Paris`), checked against the
//! `chrono-tz` database once, so nothing downstream handles an unknown zone.

use std::str::FromStr;

use chrono_tz::Tz;

use super::Users;
use crate::on_db;

/// A zone of the IANA database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeZone(Tz);

impl TimeZone {
    /// The zone this name (as `Intl` or a form sends it) names; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Tz::from_str(name.trim()).ok().map(Self)
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }

    pub fn tz(self) -> Tz {
        self.0
    }

    /// Every zone a sender can choose, by name.
    pub fn all() -> impl Iterator<Item = TimeZone> {
        chrono_tz::TZ_VARIANTS.iter().map(|&tz| Self(tz))
    }
}

impl Users {
    /// Stores the zone an account reads times in; `None` goes back to the language's default.
    pub async fn set_time_zone(&self, id: i64, zone: Option<TimeZone>) -> Result<(), sqlx::Error> {
        const SQL: &str = "UPDATE users SET time_zone = $2 WHERE id = $1";
        let name = zone.map(TimeZone::name);
        on_db!(&self.db, |pool| sqlx::query(SQL).bind(id).bind(name).execute(pool).await.map(drop))
    }

    /// Stores the zone a browser reported, unless the account already has one (chosen or adopted).
    pub async fn adopt_time_zone(&self, id: i64, zone: TimeZone) -> Result<(), sqlx::Error> {
        const SQL: &str = "UPDATE users SET time_zone = $2 WHERE id = $1 AND time_zone IS NULL";
        on_db!(&self.db, |pool| sqlx::query(SQL).bind(id).bind(zone.name()).execute(pool).await.map(drop))
    }
}

#[cfg(test)]
mod tests {
    use super::TimeZone;

    #[test]
    fn only_names_of_the_zone_database_are_zones() {
        assert_eq!(TimeZone::parse("Europe/Paris").map(TimeZone::name), Some("Europe/Paris"));
        assert_eq!(TimeZone::parse(" Asia/Tokyo ").map(TimeZone::name), Some("Asia/Tokyo"));
        for bad in ["", "Mars/Olympus", "../etc/passwd", "europe/paris\n", "UTC; DROP TABLE users"] {
            assert_eq!(TimeZone::parse(bad), None, "{bad:?}");
        }
        assert!(TimeZone::all().any(|zone| zone.name() == "America/New_York"));
    }
}
