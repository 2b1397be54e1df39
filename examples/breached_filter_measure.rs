//! Measures the shipped breached-password filter on passwords it does not list (random ones, like
//! those `watasu user add` generates): how many it refuses by chance, and how long a check takes.
//! Five rounds of 200,000; prints each round, then the median with the range.
//! `cargo run --release --example breached_filter_measure`

use std::time::Instant;

use watasu::{accounts::password::breached::is_breached, secret::random_token};

const ROUNDS: usize = 5;
const PER_ROUND: usize = 200_000;

fn main() {
    let mut rates = Vec::new();
    let mut micros = Vec::new();
    for round in 1..=ROUNDS {
        let passwords: Vec<String> = (0..PER_ROUND).map(|_| random_token().expose().to_owned()).collect();
        let started = Instant::now();
        let refused = passwords.iter().filter(|p| is_breached(p)).count();
        let per_check = started.elapsed().as_secs_f64() * 1e6 / PER_ROUND as f64;
        let rate = refused as f64 * 100.0 / PER_ROUND as f64;
        println!("round {round}: {refused} of {PER_ROUND} refused by chance ({rate:.3}%), {per_check:.2} µs a check");
        rates.push(rate);
        micros.push(per_check);
    }
    println!("false positives: {}", summary(&mut rates, "%"));
    println!("time per check:  {}", summary(&mut micros, " µs"));
}

/// The median and the range of `values`.
fn summary(values: &mut [f64], unit: &str) -> String {
    values.sort_by(f64::total_cmp);
    let (low, median, high) = (values[0], values[values.len() / 2], values[values.len() - 1]);
    format!("median {median:.3}{unit} (range {low:.3}–{high:.3}{unit})")
}
