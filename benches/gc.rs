//! GC benchmark (prints numbers; asserts nothing): with 1,000,000 purged shares in the database,
//! the median time of an empty purge-candidate query with and without the partial index, and the
//! landing page's latency under load with the after-response GC on and off, on both backends.
//!
//! Run: `cargo bench --bench gc` (release build). Settings: BENCH_ROWS (1000000),
//! BENCH_SECONDS (10), BENCH_CONNECTIONS (64).

#[path = "../tests/it/support/pg.rs"]
#[allow(dead_code)]
mod pg;
#[path = "support/seed.rs"]
mod seed;

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use clap::Parser;
use watasu::{
    App,
    config::{Config, Settings},
    db::Db,
    lifecycle::LifecycleRepository,
};

#[derive(Parser)]
struct BenchCli {
    #[command(flatten)]
    settings: Settings,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let rows = env_number("BENCH_ROWS", 1_000_000);
    let seconds = env_number("BENCH_SECONDS", 10);
    let connections = env_number("BENCH_CONNECTIONS", 64) as usize;
    let cluster = tokio::task::spawn_blocking(pg::PgCluster::start).await.unwrap();
    let mut table = vec![
        "| backend | purged rows | empty candidate query, median (no partial index) | (with partial index) | landing p50 / p99, GC off | landing p50 / p99, GC on | p99 ratio on/off | req/s off / on |".to_owned(),
        "|---|---|---|---|---|---|---|---|".to_owned(),
    ];
    for backend in ["sqlite", "postgres"] {
        let dir = tempfile::tempdir().unwrap();
        let url = match backend {
            "sqlite" => format!("sqlite://{}?mode=rwc", dir.path().join("watasu.db").display()),
            _ => cluster.create_database().await,
        };
        let db = Db::connect(&url, Duration::from_secs(10)).await.unwrap();
        db.migrate().await.unwrap();
        let started = Instant::now();
        let token = seed::fill(&db, rows).await;
        eprintln!("{backend}: filled {rows} purged rows in {:.1?}", started.elapsed());

        let repo = LifecycleRepository::new(db.clone(), Duration::from_secs(900), Duration::from_secs(3600));
        let with_index = seed::median_query(&repo).await;
        seed::drop_index(&db, true).await;
        let without_index = seed::median_query(&repo).await;
        seed::drop_index(&db, false).await;

        let mut latencies = Vec::new();
        for access_time_gc in [false, true] {
            let app = start(&url, dir.path(), access_time_gc).await;
            let path = format!("/s/{token}");
            latencies.push(load(&app.0, &path, connections, Duration::from_secs(seconds)).await);
            let _ = app.1.send(());
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let (off, on) = (&latencies[0], &latencies[1]);
        table.push(format!(
            "| {backend} | {rows} | {:.3} ms | {:.3} ms | {:.2} / {:.2} ms | {:.2} / {:.2} ms | {:.2} | {:.0} / {:.0} |",
            ms(without_index),
            ms(with_index),
            ms(off.p50),
            ms(off.p99),
            ms(on.p50),
            ms(on.p99),
            on.p99.as_secs_f64() / off.p99.as_secs_f64(),
            off.rps,
            on.rps,
        ));
        db.close().await;
    }
    println!("{}", table.join("\n"));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn start(
    url: &str,
    data_dir: &std::path::Path,
    access_time_gc: bool,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let settings = BenchCli::parse_from([
        "watasu",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir.to_str().unwrap(),
        "--database-url",
        url,
        "--access-time-gc",
        &access_time_gc.to_string(),
        "--gc-interval",
        "1h",
    ])
    .settings;
    let app = App::build(Config::from_settings(settings).unwrap()).await.unwrap();
    let base = format!("http://{}", app.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(app.run(async move {
        let _ = rx.await;
    }));
    (base, tx)
}

struct Latency {
    p50: Duration,
    p99: Duration,
    rps: f64,
}

/// `connections` clients (each with its own cookies, like a returning visitor) request `path`
/// back to back for `duration`.
async fn load(base: &str, path: &str, connections: usize, duration: Duration) -> Latency {
    let url = Arc::new(format!("{base}{path}"));
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder().cookie_store(true).build().unwrap();
            let mut samples = Vec::new();
            while Instant::now() < deadline {
                let started = Instant::now();
                let response = client.get(url.as_str()).send().await.unwrap();
                assert_eq!(response.status(), 200);
                response.bytes().await.unwrap();
                samples.push(started.elapsed());
            }
            samples
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort();
    Latency { p50: all[all.len() / 2], p99: all[all.len() * 99 / 100], rps: all.len() as f64 / duration.as_secs_f64() }
}
