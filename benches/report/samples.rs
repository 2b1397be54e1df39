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
        let values = self.sorted();
        match values.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => values[n / 2],
            n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
        }
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

/// The ratio of two medians, with the range the spreads allow (lowest over highest to highest
/// over lowest).
pub fn ratio(a: &Samples, b: &Samples) -> String {
    format!("{:.2} ({:.2}–{:.2})", a.median() / b.median(), a.min() / b.max(), a.max() / b.min())
}
