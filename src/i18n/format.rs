//! Numbers and times as people read them, per language.

use crate::{accounts::TimeZone, db::Timestamp, i18n::Lang};

/// Who reads a time: the page's language, and the zone they chose if they have an account.
#[derive(Clone, Copy, Debug)]
pub struct Reader {
    pub lang: Lang,
    pub zone: Option<TimeZone>,
}

/// A reader without an account (a recipient) or without a chosen zone.
impl From<Lang> for Reader {
    fn from(lang: Lang) -> Self {
        Self { lang, zone: None }
    }
}

/// "1.5 MB" / "820 KB" / "12 bytes" (decimal units, as file managers on phones show them).
pub fn human_size(bytes: i64, lang: Lang) -> String {
    let bytes = bytes.max(0) as f64;
    let units = ["KB", "MB", "GB", "TB"];
    if bytes < 1000.0 {
        return match lang {
            Lang::Ja => format!("{bytes} バイト"),
            Lang::En => format!("{bytes} bytes"),
        };
    }
    let mut value = bytes / 1000.0;
    let mut unit = units[0];
    for next in &units[1..] {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = next;
    }
    if value < 10.0 { format!("{value:.1} {unit}") } else { format!("{value:.0} {unit}") }
}

/// A point in time in the reader's zone, which the text names. Without a chosen zone: Japan time
/// for Japanese pages (most recipients), UTC otherwise.
pub fn human_time(at: Timestamp, reader: impl Into<Reader>) -> String {
    in_zone(at, reader.into(), "%Y年%-m月%-d日 %H:%M", "%-d %b %Y, %H:%M")
}

/// The time of day only, in the reader's zone, which the text names: for a wait of minutes.
pub fn clock_time(at: Timestamp, reader: impl Into<Reader>) -> String {
    in_zone(at, reader.into(), "%H:%M", "%H:%M")
}

/// `at` in the reader's zone, written with the Japanese or English pattern, the zone named.
fn in_zone(at: Timestamp, reader: Reader, ja: &str, en: &str) -> String {
    let local = local_time(at, reader);
    match reader.lang {
        Lang::Ja => format!("{}（{}）", local.format(ja), zone_name(reader)),
        Lang::En => format!("{} {}", local.format(en), zone_name(reader)),
    }
}

/// `at` on the reader's clock: for pages that name the zone once (a timeline grouped by day).
pub fn local_time(at: Timestamp, reader: Reader) -> chrono::DateTime<chrono_tz::Tz> {
    at.0.with_timezone(&zone_of(reader))
}

fn zone_of(reader: Reader) -> chrono_tz::Tz {
    reader.zone.map_or_else(|| default_zone(reader.lang), TimeZone::tz)
}

/// The name of the reader's zone as their times name it: 日本時間 on Japanese pages for Japan.
pub fn zone_name(reader: Reader) -> String {
    match (reader.lang, zone_of(reader).name()) {
        (Lang::Ja, "Asia/Tokyo") => "日本時間".to_owned(),
        (_, name) => name.to_owned(),
    }
}

/// A day as a heading: "2025年11月30日（日）" / "Sun 30 Nov 2025".
pub fn day_heading(day: chrono::NaiveDate, lang: Lang) -> String {
    use chrono::Datelike;
    match lang {
        Lang::Ja => {
            let weekday = ["月", "火", "水", "木", "金", "土", "日"][day.weekday().num_days_from_monday() as usize];
            format!("{}（{weekday}）", day.format("%Y年%-m月%-d日"))
        }
        Lang::En => day.format("%a %-d %b %Y").to_string(),
    }
}

/// The zone of a reader who chose none.
fn default_zone(lang: Lang) -> chrono_tz::Tz {
    match lang {
        Lang::Ja => chrono_tz::Asia::Tokyo,
        Lang::En => chrono_tz::UTC,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_size(12, Lang::En), "12 bytes");
        assert_eq!(human_size(1_500_000, Lang::En), "1.5 MB");
        assert_eq!(human_size(820_000, Lang::Ja), "820 KB");
        assert_eq!(human_size(2_147_483_648, Lang::En), "2.1 GB");
    }

    #[test]
    fn japanese_pages_show_japan_time() {
        let at = Timestamp(chrono::DateTime::from_timestamp(1_764_460_800, 0).unwrap()); // 2025-11-30 00:00 UTC
        assert_eq!(human_time(at, Lang::Ja), "2025年11月30日 09:00（日本時間）");
        assert_eq!(human_time(at, Lang::En), "30 Nov 2025, 00:00 UTC");
        assert_eq!(clock_time(at, Lang::Ja), "09:00（日本時間）");
        assert_eq!(clock_time(at, Lang::En), "00:00 UTC");
    }

    #[test]
    fn a_chosen_zone_is_used_and_named_in_either_language() {
        let at = Timestamp(chrono::DateTime::from_timestamp(1_764_460_800, 0).unwrap()); // 2025-11-30 00:00 UTC
        let reader = |lang, zone| Reader { lang, zone: TimeZone::parse(zone) };
        assert_eq!(human_time(at, reader(Lang::En, "Asia/Tokyo")), "30 Nov 2025, 09:00 Asia/Tokyo");
        assert_eq!(human_time(at, reader(Lang::Ja, "Asia/Tokyo")), "2025年11月30日 09:00（日本時間）");
        assert_eq!(human_time(at, reader(Lang::Ja, "UTC")), "2025年11月30日 00:00（UTC）");
        assert_eq!(human_time(at, reader(Lang::En, "America/New_York")), "29 Nov 2025, 19:00 America/New_York");
        assert_eq!(human_time(at, reader(Lang::Ja, "Europe/Paris")), "2025年11月30日 01:00（Europe/Paris）");
        assert_eq!(zone_name(reader(Lang::En, "Asia/Tokyo")), "Asia/Tokyo");
        assert_eq!(zone_name(Lang::Ja.into()), "日本時間");
    }

    #[test]
    fn a_day_heading_names_the_weekday() {
        let day = chrono::NaiveDate::from_ymd_opt(2025, 11, 30).unwrap();
        assert_eq!(day_heading(day, Lang::Ja), "2025年11月30日（日）");
        assert_eq!(day_heading(day, Lang::En), "Sun 30 Nov 2025");
    }
}
