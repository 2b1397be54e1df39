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

/// A size as every page, mail and message shows it: decimal units (1 KB = 1,000 bytes), as file
/// managers on phones show them, the same words in both languages. One decimal under 10, none when
/// it is zero: "2.1 GB", "1.5 MB", "820 KB", "2 GB", "12 bytes". A negative count reads as 0.
pub fn human_size(bytes: impl TryInto<u64>, lang: Lang) -> String {
    let bytes = bytes.try_into().unwrap_or(0);
    if bytes < 1000 {
        return match lang {
            Lang::Ja => format!("{bytes} バイト"),
            Lang::En => format!("{bytes} bytes"),
        };
    }
    let units = ["KB", "MB", "GB", "TB"];
    let mut value = bytes as f64 / 1000.0;
    let mut unit = units[0];
    for next in &units[1..] {
        // 999.6 KB would round to "1000 KB": that is 1 MB.
        if value < 999.5 {
            break;
        }
        value /= 1000.0;
        unit = next;
    }
    let number = if value < 10.0 { format!("{value:.1}") } else { format!("{value:.0}") };
    format!("{} {unit}", number.strip_suffix(".0").unwrap_or(&number))
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
        assert_eq!(human_size(2_147_483_648_i64, Lang::En), "2.1 GB");
    }

    #[test]
    fn sizes_are_decimal_in_both_languages_whatever_the_integer_type() {
        assert_eq!(human_size(2u64 << 30, Lang::Ja), "2.1 GB", "the default limit, 2G, read in decimal");
        assert_eq!(human_size(300 * 1024_i64, Lang::En), "307 KB", "what the sender saw as 300 KiB");
        assert_eq!(human_size(300 * 1024_u64, Lang::Ja), "307 KB");
        assert_eq!(human_size(2_000_000_000_u64, Lang::En), "2 GB", "no trailing .0");
        assert_eq!(human_size(999, Lang::En), "999 bytes");
        assert_eq!(human_size(1000, Lang::Ja), "1 KB");
        assert_eq!(human_size(999_999, Lang::En), "1 MB", "never 1000 KB");
        assert_eq!(human_size(1_000_000, Lang::En), "1 MB");
        assert_eq!(human_size(12, Lang::Ja), "12 バイト");
        assert_eq!(human_size(-5_i64, Lang::En), "0 bytes");
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
