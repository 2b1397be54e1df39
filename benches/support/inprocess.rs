//! The in-process harness of the gc and sweep benchmarks: settings from the environment, the app
//! started in this process, and a load generator of returning visitors that records latencies.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use clap::Parser;
use watasu::{
    App,
    config::{Config, Settings},
    web::AppState,
};

#[derive(Parser)]
struct BenchCli {
    #[command(flatten)]
    settings: Settings,
}

pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The app serving in this process; dropping `stop` (or sending on it) shuts it down.
pub struct RunningApp {
    pub base: String,
    pub state: AppState,
    pub stop: tokio::sync::oneshot::Sender<()>,
}

/// Starts the app on `url` with its timers an hour or more away, plus `extra` flags.
pub async fn start(url: &str, data_dir: &std::path::Path, extra: &[&str]) -> RunningApp {
    let data_dir = data_dir.to_str().unwrap();
    let mut args = vec!["watasu", "--listen", "127.0.0.1:0", "--data-dir", data_dir, "--database-url", url];
    args.extend(["--gc-interval", "1h", "--maintenance-interval", "1d"]);
    args.extend(extra);
    let settings = BenchCli::parse_from(args).settings;
    let app = App::build(Config::from_settings(settings).unwrap()).await.unwrap();
    let base = format!("http://{}", app.local_addr());
    let state = app.state().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run(async move {
        let _ = stopped.await;
    }));
    RunningApp { base, state, stop }
}

/// How long the load lasts.
pub enum Load {
    For(Duration),
    /// Until notified.
    Until(Arc<tokio::sync::Notify>),
}

pub struct Latency {
    pub p50: Duration,
    pub p99: Duration,
    pub rps: f64,
}

/// `connections` clients (each with its own cookies, like a returning visitor) request `path`
/// back to back.
pub async fn load(base: &str, path: &str, connections: usize, how_long: Load) -> Latency {
    let url = Arc::new(format!("{base}{path}"));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (url, stop) = (url.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder().cookie_store(true).build().unwrap();
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let response = client.get(url.as_str()).send().await.unwrap();
                assert_eq!(response.status(), 200);
                response.bytes().await.unwrap();
                samples.push(started.elapsed());
            }
            samples
        }));
    }
    match how_long {
        Load::For(duration) => tokio::time::sleep(duration).await,
        Load::Until(done) => done.notified().await,
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort();
    Latency { p50: all[all.len() / 2], p99: all[all.len() * 99 / 100], rps: all.len() as f64 / elapsed.as_secs_f64() }
}
