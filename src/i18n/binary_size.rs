//! Sizes in binary units (KiB, MiB, GiB), as the upload limit is configured (`2G` is 2 GiB), so a
//! sender compares a file with the limit in one unit.

use super::Lang;

/// "2 GiB" / "1.5 MiB" / "820 KiB" / "12 bytes": one decimal under 10, none when it is zero.
pub fn binary_size(bytes: u64, lang: Lang) -> String {
    if bytes < 1024 {
        return match lang {
            Lang::Ja => format!("{bytes} バイト"),
            Lang::En => format!("{bytes} bytes"),
        };
    }
    let units = ["KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64 / 1024.0;
    let mut unit = units[0];
    for next in &units[1..] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    let number = if value < 10.0 { format!("{value:.1}") } else { format!("{value:.0}") };
    format!("{} {unit}", number.strip_suffix(".0").unwrap_or(&number))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_reads_in_the_unit_it_was_configured_in() {
        assert_eq!(binary_size(2 << 30, Lang::En), "2 GiB");
        assert_eq!(binary_size(500 << 20, Lang::Ja), "500 MiB");
        assert_eq!(binary_size(1_572_864, Lang::En), "1.5 MiB");
        assert_eq!(binary_size(100 * 1024, Lang::En), "100 KiB");
        assert_eq!(binary_size(12, Lang::En), "12 bytes");
        assert_eq!(binary_size(12, Lang::Ja), "12 バイト");
    }
}
