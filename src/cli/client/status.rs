//! `watasu status`: where each recipient of a handover stands, read from the server's API; with
//! `--wait`, polled until every recipient got somewhere (a CI job waiting for its customer's
//! download) or the time is up.

use std::{path::PathBuf, time::Duration};

use reqwest::Method;
use serde_json::Value;

use super::{EXIT_TIMED_OUT, Exit, Failure, Server};
use crate::{config::parse_duration, outln};

/// How often `--wait` asks the server.
const POLL: Duration = Duration::from_secs(3);

#[derive(clap::Args)]
pub struct StatusArgs {
    /// The handover's id, as `watasu send` printed it (any of its shares' ids will do).
    pub handover: i64,
    /// The watasu server, like https://files.example.com.
    #[arg(long, env = "WATASU_SERVER", value_name = "URL")]
    pub server: String,
    /// Send the API token (and the files) over plain http:// to a host that is not this machine,
    /// unencrypted: anyone on the network between can read the token and use it. Without it,
    /// an http:// --server must be localhost, 127.0.0.0/8 or ::1.
    #[arg(long)]
    pub allow_insecure_http: bool,
    /// A file holding the API token (without it, WATASU_TOKEN holds it).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Print the server's JSON answer, each share with its `state` and `state_at` added.
    #[arg(long)]
    pub json: bool,
    /// Wait until every recipient has downloaded, or until every share has ended (downloaded,
    /// expired or ended otherwise).
    #[arg(long, value_enum)]
    pub wait: Option<Goal>,
    /// How long --wait waits at most, like 30m or 2h; then the exit code is 3.
    #[arg(long, value_parser = parse_duration, default_value = "1h")]
    pub timeout: Duration,
}

/// What `--wait` waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Goal {
    Downloaded,
    Ended,
}

/// Where one recipient stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Waiting,
    Opened,
    Verified,
    Downloaded,
    Expired,
    Ended,
    Locked,
}

impl State {
    pub fn word(self) -> &'static str {
        match self {
            Self::Waiting => "waiting",
            Self::Opened => "opened",
            Self::Verified => "verified",
            Self::Downloaded => "downloaded",
            Self::Expired => "expired",
            Self::Ended => "ended",
            Self::Locked => "locked",
        }
    }

    /// The share takes no download any more.
    fn is_over(self) -> bool {
        matches!(self, Self::Downloaded | Self::Expired | Self::Ended)
    }

    /// Where a share of the API's answer stands, and since when: its outcome, and before a
    /// download the furthest step of its timeline.
    pub fn of(share: &Value) -> (Self, Option<String>) {
        let text = |value: &Value| value.as_str().map(str::to_owned);
        let last = |kinds: &[&str]| {
            let events = share["events"].as_array().map(Vec::as_slice).unwrap_or_default();
            events.iter().rev().find(|e| kinds.iter().any(|k| e["kind"] == *k)).and_then(|e| text(&e["at"]))
        };
        match share["outcome"].as_str().unwrap_or_default() {
            "downloaded" => (Self::Downloaded, text(&share["downloaded_at"]).or_else(|| last(&["downloaded"]))),
            "expired" => (Self::Expired, text(&share["expires_at"])),
            "revoked" | "deleted" => (Self::Ended, last(&["revoked", "scan_refused", "purged"])),
            "locked" => (Self::Locked, last(&["locked"])),
            _ => match (last(&["verified"]), last(&["opened"])) {
                (Some(at), _) => (Self::Verified, Some(at)),
                (None, Some(at)) => (Self::Opened, Some(at)),
                (None, None) => (Self::Waiting, text(&share["created_at"])),
            },
        }
    }
}

/// Prints where each recipient stands; with `--wait`, once they all got there.
pub async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let token = super::token(args.token_file.as_ref())?;
    let server = Server::new(&args.server, token, args.allow_insecure_http)?;
    let path = format!("handovers/{}", args.handover);
    let Some(goal) = args.wait else {
        let handover = server.api(Method::GET, &path, None).await?;
        return print(handover, args.json);
    };
    let deadline = tokio::time::Instant::now() + args.timeout;
    let mut last = None;
    loop {
        // A call still unanswered at the deadline is one that ran out of time, not a hang.
        let asked = tokio::time::timeout_at(deadline, server.api(Method::GET, &path, None)).await;
        match asked.unwrap_or_else(|_| Err(Failure::Unreachable("no answer before the timeout".to_owned()))) {
            Ok(handover) => {
                let states: Vec<State> = shares(&handover).iter().map(|s| State::of(s).0).collect();
                if goal == Goal::Downloaded && states.iter().any(|s| s.is_over() && *s != State::Downloaded) {
                    print(handover, args.json)?;
                    anyhow::bail!("a share ended without a download: it will not be downloaded any more");
                }
                let reached =
                    states.iter().all(|s| if goal == Goal::Downloaded { *s == State::Downloaded } else { s.is_over() });
                if reached && !states.is_empty() {
                    return print(handover, args.json);
                }
                last = Some(handover);
            }
            // Said in the job's log, so a server away for the whole wait shows why it ran out.
            Err(failure) if failure.is_transient() => eprintln!("watasu: handover {}: {failure}", args.handover),
            Err(failure) => return Err(failure.into()),
        }
        if tokio::time::Instant::now() + POLL > deadline {
            if let Some(handover) = last {
                print(handover, args.json)?;
            }
            let message = format!("not every recipient reached {goal:?} within the timeout").to_lowercase();
            return Err(Exit { code: EXIT_TIMED_OUT, message }.into());
        }
        tokio::time::sleep(POLL).await;
    }
}

fn shares(handover: &Value) -> &[Value] {
    handover["shares"].as_array().map(Vec::as_slice).unwrap_or_default()
}

/// One line per recipient (address, state, since when), or the JSON with each share's state.
fn print(mut handover: Value, json: bool) -> anyhow::Result<()> {
    if json {
        if let Some(shares) = handover["shares"].as_array_mut() {
            for share in shares {
                let (state, at) = State::of(share);
                share["state"] = state.word().into();
                share["state_at"] = at.into();
            }
        }
        outln!("{handover:#}");
        return Ok(());
    }
    let shares = shares(&handover);
    let width = shares.iter().filter_map(|s| s["recipient"].as_str()).map(str::len).max().unwrap_or(0);
    for share in shares {
        let (state, at) = State::of(share);
        let recipient = share["recipient"].as_str().unwrap_or_default();
        outln!("{recipient:<width$}  {:<10}  {}", state.word(), at.unwrap_or_default());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_waiting_share_stands_at_the_furthest_step_of_its_timeline() {
        let share = |outcome: &str, kinds: &[&str]| {
            let events: Vec<Value> = kinds.iter().map(|k| json!({ "kind": k, "at": format!("{k}-time") })).collect();
            json!({ "outcome": outcome, "events": events, "created_at": "created-time", "expires_at": "expiry" })
        };
        assert_eq!(State::of(&share("waiting", &[])), (State::Waiting, Some("created-time".into())));
        assert_eq!(State::of(&share("waiting", &["opened"])).0, State::Opened);
        let verified = State::of(&share("waiting", &["opened", "code_sent", "verified", "opened"]));
        assert_eq!(verified, (State::Verified, Some("verified-time".into())));
        assert_eq!(State::of(&share("expired", &["opened"])), (State::Expired, Some("expiry".into())));
        assert_eq!(State::of(&share("revoked", &["revoked"])), (State::Ended, Some("revoked-time".into())));
        assert_eq!(State::of(&share("locked", &["locked"])).0, State::Locked);
    }
}
