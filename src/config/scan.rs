//! The optional virus scan by clamd: where clamd listens, which files it scans, what becomes of a
//! file too large for it, and how long a file it never answers for is held before it is refused.

use std::time::Duration;

use super::{ConfigError, parse_duration};
use crate::scan::{ClamdAddress, TooLargePolicy};

/// The scan settings as given.
#[derive(clap::Args, Clone, Debug)]
pub struct ScanSettings {
    /// clamd to scan files with: `tcp://HOST:PORT` or the path of its Unix socket. Unset: nothing
    /// is scanned.
    #[arg(long, env = "WATASU_CLAMD", global = true)]
    pub clamd: Option<ClamdAddress>,

    /// Scan the files senders hand over: each is held, and its recipients are not mailed, until
    /// clamd found it clean. Needs WATASU_CLAMD.
    #[arg(long, env = "WATASU_SCAN_OUTBOUND", default_value_t = false, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set, global = true)]
    pub scan_outbound: bool,

    /// A file longer than clamd's StreamMaxLength: `refuse` it like an infected one, or `release`
    /// it marked "not scanned: too large".
    #[arg(long, env = "WATASU_SCAN_TOO_LARGE", value_enum, default_value = "refuse", global = true)]
    pub scan_too_large: TooLargePolicy,

    /// The longest one step of a scan may wait for clamd (connecting, each chunk, the verdict);
    /// then the scan counts as unanswered and is tried again later.
    #[arg(long, env = "WATASU_SCAN_TIMEOUT", default_value = "60s", value_parser = parse_duration, global = true)]
    pub scan_timeout: Duration,

    /// Scans clamd does not answer (down, or past WATASU_SCAN_TIMEOUT) before a held file is
    /// refused; the waits between them double from 30 s up to 30 min. A file is never released
    /// unscanned.
    #[arg(long, env = "WATASU_SCAN_ATTEMPTS", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=1000), global = true)]
    pub scan_attempts: u32,
}

impl ScanSettings {
    /// Refuses a scan asked for without a clamd to ask, and a zero timeout.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        if self.scan_outbound && self.clamd.is_none() {
            return Err(ConfigError::new("WATASU_SCAN_OUTBOUND", "needs WATASU_CLAMD (where clamd listens)"));
        }
        if self.scan_timeout.is_zero() {
            return Err(ConfigError::new("WATASU_SCAN_TIMEOUT", "must be longer than 0s"));
        }
        Ok(())
    }
}
