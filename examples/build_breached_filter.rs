//! Builds the breached-password filter from a list on standard input (one password a line) and
//! writes it to the path given; `scripts/build-breached-passwords` feeds it the named list.

use std::io::Read;

fn main() -> anyhow::Result<()> {
    let out = std::env::args().nth(1).ok_or_else(|| anyhow::anyhow!("usage: build_breached_filter OUT < LIST"))?;
    let mut list = String::new();
    std::io::stdin().read_to_string(&mut list)?;
    let filter = watasu::accounts::password::breached::build(&list)?;
    std::fs::write(&out, &filter)?;
    eprintln!("{out}: {} bytes", filter.len());
    Ok(())
}
