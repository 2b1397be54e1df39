//! Human-friendly durations for settings: `90s`, `15m`, `1h`, `7d`.

use std::time::Duration;

/// Parses one whole number followed by one unit (`s`, `m`, `h`, `d`).
///
/// One unit only keeps the format obvious in a config file; `90m` covers `1h30m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("'{text}' has no unit; write it like 90s, 15m, 1h or 7d"))?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' does not start with a whole number; write it like 90s, 15m, 1h or 7d"))?;
    let seconds_per_unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => return Err(format!("'{text}' has an unknown unit; use s, m, h or d")),
    };
    number.checked_mul(seconds_per_unit).map(Duration::from_secs).ok_or_else(|| format!("'{text}' is too large"))
}

/// Parses a byte count: a whole number with an optional binary unit (`K`, `M`, `G`, `T`).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("'{text}' is not a size; write it like 500M or 2G"))?;
    let multiplier: u64 = match unit.trim_end_matches(['B', 'b', 'i']) {
        "" => 1,
        "K" | "k" => 1 << 10,
        "M" | "m" => 1 << 20,
        "G" | "g" => 1 << 30,
        "T" | "t" => 1 << 40,
        _ => return Err(format!("'{text}' has an unknown unit; use K, M, G or T")),
    };
    number.checked_mul(multiplier).ok_or_else(|| format!("'{text}' is too large"))
}

/// Writes a duration back in the largest unit that divides it exactly.
pub fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60)] {
        if secs >= size && secs.is_multiple_of(size) {
            return format!("{}{unit}", secs / size);
        }
    }
    format!("{secs}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_is_understood() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3_600)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(604_800)));
    }

    #[test]
    fn a_duration_without_a_known_unit_is_refused() {
        for bad in ["", "15", "m", "1.5h", "-1h", "1w", "1h30m", "ten minutes"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn an_overflowing_duration_is_refused_not_wrapped() {
        assert!(parse_duration("18446744073709551615d").is_err());
    }

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("64K"), Ok(65_536));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert!(parse_bytes("2X").is_err());
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn formatting_round_trips() {
        for text in ["90s", "15m", "1h", "7d", "36h"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
    }
}
