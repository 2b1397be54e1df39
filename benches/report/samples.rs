//! Repeated measurements of one figure: its median and spread, so a ratio of two figures can be
//! read against the noise of each.

/// The values of one figure over several runs.
#[derive(Clone, Debug, Default)]
pub struct Samples(Vec<f64>);

impl Samples {
    pub fn push(&mut self, value: f64) {
        self.0.push(value);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    fn sorted(&self) -> Vec<f64> {
        let mut values = self.0.clone();
        values.sort_by(f64::total_cmp);
        values
    }

    pub fn median(&self) -> f64 {
        self.quantile(0.5)
    }

    /// The value below which the fraction `q` of the samples lie, interpolated between the two
    /// nearest (the median of an even count is the mean of the middle two).
    pub fn quantile(&self, q: f64) -> f64 {
        let values = self.sorted();
        if values.is_empty() {
            return f64::NAN;
        }
        let at = q * (values.len() - 1) as f64;
        let (low, high) = (at.floor() as usize, at.ceil() as usize);
        values[low] + (values[high] - values[low]) * (at - low as f64)
    }

    pub fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }

    pub fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }

    /// `median (min–max, n runs)` with `digits` decimals.
    pub fn show(&self, digits: usize, unit: &str) -> String {
        format!(
            "{:.digits$}{unit} ({:.digits$}–{:.digits$}, {} runs)",
            self.median(),
            self.min(),
            self.max(),
            self.len()
        )
    }
}

/// `median (quartiles p25–p75; lowest–highest, n pairs)` of ratios taken pair by pair.
pub fn show_ratios(ratios: &Samples) -> String {
    format!(
        "{:.3} (p25–p75 {:.3}–{:.3}; {:.2}–{:.2}, {} pairs)",
        ratios.median(),
        ratios.quantile(0.25),
        ratios.quantile(0.75),
        ratios.min(),
        ratios.max(),
        ratios.len()
    )
}

/// The ratio of two medians, with the range the spreads allow (lowest over highest to highest
/// over lowest).
pub fn ratio(a: &Samples, b: &Samples) -> String {
    format!("{:.2} ({:.2}–{:.2})", a.median() / b.median(), a.min() / b.max(), a.max() / b.min())
}
