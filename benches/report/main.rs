//! The performance report (prints numbers; asserts only what makes them meaningless if false):
//! the release binary as a real process over loopback, each figure beside its reference in the
//! same run. Run it with `scripts/bench`, which installs nginx and wrk and builds first; the table
//! goes to standard output and target/bench/report.md.
//!
//! `WATASU_BENCH_QUICK=1` shrinks everything (64 MiB files, 10,000 purged rows, 3 s load runs)
//! to try the machinery in about a minute; its figures mean little.

#[path = "../../tests/it/support/pg.rs"]
#[allow(dead_code)]
mod pg;
#[path = "../support/seed.rs"]
#[allow(dead_code)]
mod seed;

mod browser;
mod bundles;
mod candidate;
mod crowds;
mod downloads;
mod growth;
mod load;
mod network;
mod procs;
mod s3_servers;
mod samples;
mod scale;
mod sealed;
mod store;
mod table;
mod transfer;

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use watasu::{
    db::Db,
    lifecycle::LifecycleRepository,
    storage::sealed::{Header, SEGMENT, format::NONCE_PREFIX},
};

use load::{Logins, WrkResult};
use procs::{Nginx, PeakRss, Watasu, memory_kib};
use samples::Samples;
use transfer::{Race, Transfer};

/// Sizes and durations of one run.
pub struct Options {
    pub quick: bool,
    pub rows: u64,
    pub file_bytes: u64,
    pub seconds: u64,
    pub warmup: u64,
    /// Recipients prepared at the code step: more than the code step can use in `seconds`.
    pub code_shares: usize,
    pub visitors: usize,
    pub logins_per_second: u32,
    /// Repetitions of each figure that is compared with another (alternated with it).
    pub rounds: usize,
    /// The file moved through each object store of the store section.
    pub store_bytes: u64,
}

impl Options {
    fn from_env() -> Self {
        let quick = std::env::var("WATASU_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
        if quick {
            Self {
                quick,
                rows: 10_000,
                file_bytes: 64 << 20,
                seconds: 3,
                warmup: 1,
                code_shares: 3_000,
                visitors: 64,
                logins_per_second: 20,
                rounds: 2,
                store_bytes: 64 << 20,
            }
        } else {
            Self {
                quick,
                rows: 1_000_000,
                file_bytes: 2 << 30,
                seconds: 20,
                warmup: 3,
                code_shares: 40_000,
                visitors: 64,
                logins_per_second: 20,
                rounds: 5,
                store_bytes: 512 << 20,
            }
        }
    }
}

/// Figures of the big transfers (SQLite only: the database plays no part in moving the bytes).
pub struct Transfers {
    pub downloads: downloads::Downloads,
    /// The ZIP of several files against one file of the same total size.
    pub bundle: bundles::Bundle,
    pub upload: Transfer,
    pub dd: Transfer,
    pub upload_rss_before_kib: u64,
    pub upload_peak_kib: u64,
    /// The same upload to a server with `--encrypt-files`, stored sealed.
    pub sealed_upload: Transfer,
    pub sealed_upload_rss_before_kib: u64,
    pub sealed_upload_peak_kib: u64,
    /// The same file through tus in the page's chunk size: straight to watasu, and through nginx
    /// with a 100 MB cap on request bodies.
    pub tus_direct: Transfer,
    pub tus_proxied: Transfer,
    pub tus_peak_kib: u64,
    /// The same transfers with the files in an object store.
    pub object_store: scale::ObjectStoreTransfers,
}

/// The new-share page's tus chunk size (static/upload.js; `watasu send` sends the same).
const TUS_CHUNK: u64 = 50 << 20;

/// Everything measured on one database backend.
pub struct BackendFigures {
    pub name: &'static str,
    pub candidate: Candidate,
    pub gc: GcComparison,
    pub landing: WrkResult,
    pub code: WrkResult,
    pub race: Race,
    pub transfers: Option<Transfers>,
    /// The page under sign-in load, the sign-ins, and the server's RSS right after (KiB).
    pub logins: Option<(WrkResult, Logins, u64)>,
    /// The landing page through nginx with one instance and with two (PostgreSQL only).
    pub instances: Option<scale::Instances>,
    pub rss_after_load_kib: u64,
    pub rss_30s_after_load_kib: u64,
    /// Many downloads and many uploads at once (SQLite only, as the other transfers).
    pub crowds: Option<crowds::Crowds>,
    pub growth: growth::Growth,
}

/// The GC's candidate query finding nothing: inside the database, and as the server waits for it.
pub struct Candidate {
    pub execution_ms: Samples,
    pub round_trip_ms: Samples,
}

/// Seconds of each GC comparison run, and pairs of runs per round of the other comparisons:
/// short runs, many of them, so that the pairs' spread is narrower than the 5 % looked for.
const GC_RUN_SECONDS: u64 = 4;
const GC_PAIRS_PER_ROUND: usize = 3;

/// The landing page with access-time GC off and on, in pairs of runs.
#[derive(Default)]
pub struct GcComparison {
    pub off_p99_ms: Samples,
    pub on_p99_ms: Samples,
    /// Each pair's p99 on over p99 off.
    pub pair_ratios: Samples,
    pub off_rps: Samples,
    pub on_rps: Samples,
    pub errors: u64,
    pub seconds: u64,
}

pub struct Footprint {
    pub idle_rss_kib: u64,
    pub first_ready: Duration,
    pub restart_ready: Duration,
    pub binary_bytes: u64,
    pub stripped_bytes: Option<u64>,
}

#[tokio::main]
async fn main() {
    let started = Instant::now();
    let options = Options::from_env();
    let dir = std::env::var_os("WATASU_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench"));
    let work = WorkDir::create(dir.join("work"));

    if std::env::var("WATASU_BENCH_ONLY").as_deref() == Ok("downloads") {
        downloads_only(&work.0, &options).await;
        return;
    }
    if std::env::var("WATASU_BENCH_ONLY").as_deref() == Ok("crowds") {
        crowds_only(&work.0, &options).await;
        return;
    }
    if std::env::var("WATASU_BENCH_ONLY").as_deref() == Ok("store") {
        println!("{}", store::section(&store::measure(&work.0, options.store_bytes).await));
        return;
    }
    if std::env::var("WATASU_BENCH_ONLY").as_deref() == Ok("network") {
        let table = network::run(&work.0, options.quick).await;
        println!("{table}");
        std::fs::write(dir.join("network.md"), &table).unwrap();
        eprintln!("bench: written to {}", dir.join("network.md").display());
        return;
    }
    eprintln!("bench: footprint");
    let footprint = footprint(&work.0).await;
    eprintln!("bench: starting PostgreSQL");
    let cluster = tokio::task::spawn_blocking(|| {
        let cluster = pg::PgCluster::start();
        // The tests' cluster trades durability for speed; measure PostgreSQL as shipped.
        cluster.pg_ctl_stop();
        cluster.pg_ctl_start_with("");
        cluster
    })
    .await
    .unwrap();
    let sqlite_dir = work.0.join("sqlite");
    let sqlite_url = format!("sqlite://{}?mode=rwc", sqlite_dir.join("watasu.db").display());
    let sqlite = measure_backend("SQLite", &sqlite_url, &sqlite_dir, &work.0, &options).await;
    let postgres_url = cluster.create_database().await;
    let postgres = measure_backend("PostgreSQL", &postgres_url, &work.0.join("postgres"), &work.0, &options).await;
    tokio::task::spawn_blocking(move || cluster.pg_ctl_stop()).await.unwrap();
    let stores = store::measure(&work.0, options.store_bytes).await;

    let report = table::render(&options, &footprint, &[sqlite, postgres], &stores, started.elapsed());
    println!("{report}");
    std::fs::write(dir.join("report.md"), &report).unwrap();
    eprintln!("bench: written to {}", dir.join("report.md").display());
}

/// A fresh SQLite database in `data` with the seeded sender (and one purged share); its URL.
async fn seeded_sqlite(data: &Path) -> (Db, String) {
    std::fs::create_dir_all(data).unwrap();
    let url = format!("sqlite://{}?mode=rwc", data.join("watasu.db").display());
    let db = Db::connect(&url, Duration::from_secs(30)).await.unwrap();
    db.migrate().await.unwrap();
    seed::fill(&db, 1).await;
    (db, url)
}

/// The crowds alone, on SQLite: `WATASU_BENCH_ONLY=crowds`.
async fn crowds_only(work: &Path, o: &Options) {
    let data = work.join("crowds");
    let (db, url) = seeded_sqlite(&data).await;
    let mut server = Watasu::spawn(&data, &url, &[], &work.join("crowds.log"));
    server.wait_ready().await;
    let c = crowds::crowds(&db, &mut server, &data, work, o).await;
    server.stop();
    println!("{}", crowds::summary(&c));
}

/// The download comparison alone (`WATASU_BENCH_ONLY=downloads`), printed as it is measured:
/// for working on the download path without the whole run.
async fn downloads_only(work: &Path, o: &Options) {
    let data = work.join("downloads");
    let (db, url) = seeded_sqlite(&data).await;
    let source = work.join("source.bin");
    let (path, size) = (source.clone(), o.file_bytes);
    blocking(move || transfer::make_source(&path, size)).await;
    let mut server = Watasu::spawn(&data, &url, &[], &work.join("downloads.log"));
    let mut sealing = Watasu::spawn(&data, &url, &["--encrypt-files"], &work.join("downloads-sealing.log"));
    server.wait_ready().await;
    sealing.wait_ready().await;
    let d = downloads::compare(&db, &server, &sealing, &data, &source, work, o.rounds).await;
    let segments = downloads::segment_sizes(&db, &sealing, &data, &source, work, &SEGMENT_SIZES, o.rounds).await;
    let bundle = bundles::compare(&db, &server, &data, &source, work, o.rounds).await;
    server.stop();
    sealing.stop();
    println!(
        "quiet: watasu {} encrypted {} nginx {}",
        d.watasu.show(0, " MB/s"),
        d.sealed.show(0, " MB/s"),
        d.nginx.show(0, " MB/s")
    );
    println!("quiet: watasu/nginx {}", samples::show_ratios(&d.ratios));
    println!("quiet: encrypted/nginx {}", samples::show_ratios(&d.sealed_ratios));
    println!(
        "busy:  watasu {} encrypted {} nginx {}",
        d.busy_watasu.show(0, " MB/s"),
        d.busy_sealed.show(0, " MB/s"),
        d.busy_nginx.show(0, " MB/s")
    );
    println!("busy:  watasu/nginx {}", samples::show_ratios(&d.busy_ratios));
    println!("busy:  encrypted/nginx {}", samples::show_ratios(&d.busy_sealed_ratios));
    println!("resumed {}; peak RSS {} KiB ({} KiB before)", d.resumed.show(0, " MB/s"), d.peak_kib, d.rss_before_kib);
    println!(
        "encrypted: peak RSS {} KiB ({} KiB before); bytes checked (SHA-256)",
        d.sealed_peak_kib, d.sealed_rss_before_kib
    );
    for (size, samples) in &segments {
        println!("encrypted, {} KiB segments: {}", size >> 10, samples.show(0, " MB/s"));
    }
    let parts = format!("{} × {} MiB", bundles::FILES, bundle.part_bytes >> 20);
    println!("ZIP of {parts} {} one file {}", bundle.zip.show(0, " MB/s"), bundle.single.show(0, " MB/s"));
    println!("ZIP/one file {}", samples::show_ratios(&bundle.ratios));
}

/// The segment sizes of sealed files compared (`WATASU_BENCH_ONLY=downloads`), from the format's
/// smallest useful to its 1 MiB.
const SEGMENT_SIZES: [u32; 3] = [64 << 10, 256 << 10, 1 << 20];

/// The run's scratch folder (data folders, 2 GiB files, logs), removed at the end, also after a
/// failure. Server logs are kept beside it for a failed run.
struct WorkDir(PathBuf);

impl WorkDir {
    fn create(path: PathBuf) -> Self {
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let logs = self.0.with_file_name("failed-run-logs");
            let _ = std::fs::remove_dir_all(&logs);
            let _ = std::fs::create_dir_all(&logs);
            for entry in std::fs::read_dir(&self.0).into_iter().flatten().flatten() {
                if entry.path().extension().is_some_and(|e| e == "log") {
                    let _ = std::fs::copy(entry.path(), logs.join(entry.file_name()));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn footprint(work: &Path) -> Footprint {
    let data = work.join("footprint");
    let url = format!("sqlite://{}?mode=rwc", data.join("watasu.db").display());
    let log = work.join("footprint.log");
    let mut server = Watasu::spawn(&data, &url, &[], &log);
    let first_ready = server.wait_ready().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss_kib = memory_kib(server.pid(), "VmRSS").unwrap();
    server.stop();
    let mut restarts = Vec::new();
    for _ in 0..5 {
        let mut server = Watasu::spawn(&data, &url, &[], &log);
        restarts.push(server.wait_ready().await);
        server.stop();
    }
    restarts.sort();
    let binary = Path::new(env!("CARGO_BIN_EXE_watasu"));
    let stripped = work.join("watasu.stripped");
    let stripped_bytes = std::process::Command::new("strip")
        .args(["-o", stripped.to_str().unwrap(), binary.to_str().unwrap()])
        .status()
        .ok()
        .filter(|s| s.success())
        .and_then(|_| std::fs::metadata(&stripped).ok())
        .map(|m| m.len());
    Footprint {
        idle_rss_kib,
        first_ready,
        restart_ready: restarts[restarts.len() / 2],
        binary_bytes: std::fs::metadata(binary).unwrap().len(),
        stripped_bytes,
    }
}

/// Sets (or resets, with `None`) `synchronous_commit` for new connections to the database of
/// `url`: seeding commits tens of thousands of small transactions and need not wait for the disk,
/// the measured server must.
async fn synchronous_commit(url: &str, value: Option<&str>) {
    use sqlx::Connection;
    let name = url.rsplit('/').next().unwrap();
    let sql = match value {
        Some(value) => format!("ALTER DATABASE {name} SET synchronous_commit = {value}"),
        None => format!("ALTER DATABASE {name} RESET synchronous_commit"),
    };
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.unwrap()
}

async fn measure_backend(name: &'static str, url: &str, data: &Path, work: &Path, o: &Options) -> BackendFigures {
    let is_sqlite = url.starts_with("sqlite:");
    let tag = if is_sqlite { "sqlite" } else { "postgres" };
    std::fs::create_dir_all(data).unwrap();
    if !is_sqlite {
        synchronous_commit(url, Some("off")).await;
    }
    let db = Db::connect(url, Duration::from_secs(30)).await.unwrap();
    db.migrate().await.unwrap();
    let seeding = Instant::now();
    let token = seed::fill(&db, o.rows).await;
    eprintln!("bench: {name}: {} purged rows in {:.1?}", o.rows, seeding.elapsed());
    let cookies = work.join(format!("{tag}-cookies.txt"));
    load::visitor_cookies(&db, o.visitors, &cookies).await;
    let seeding = Instant::now();
    let submissions = work.join(format!("{tag}-codes.txt"));
    load::code_submissions(&db, 1, o.code_shares, &submissions).await;
    eprintln!("bench: {name}: {} recipients at the code step in {:.1?}", o.code_shares, seeding.elapsed());
    if !is_sqlite {
        db.close().await;
        synchronous_commit(url, None).await;
    }
    let db = if is_sqlite { db } else { Db::connect(url, Duration::from_secs(30)).await.unwrap() };
    // Timed with the code step's shares live, as every later pass of the server finds them.
    let candidate = Candidate {
        execution_ms: candidate::execution_ms(&db).await,
        round_trip_ms: candidate::round_trip_ms(&LifecycleRepository::new(
            db.clone(),
            Duration::from_secs(900),
            Duration::from_secs(3600),
        ))
        .await,
    };

    let transfers = if is_sqlite {
        let mut server = Watasu::spawn(data, url, &[], &work.join(format!("{tag}-transfers.log")));
        server.wait_ready().await;
        let (mut figures, source) = transfers(&db, &server, data, url, work, o).await;
        server.stop();
        figures.object_store = scale::object_store_transfers(&db, data, url, work, &source).await;
        std::fs::remove_file(&source).unwrap();
        Some(figures)
    } else {
        None
    };
    let crowds = if is_sqlite {
        let mut server = Watasu::spawn(data, url, &[], &work.join(format!("{tag}-crowds.log")));
        server.wait_ready().await;
        let crowds = crowds::crowds(&db, &mut server, data, work, o).await;
        server.stop();
        Some(crowds)
    } else {
        None
    };

    eprintln!("bench: {name}: landing page, access-time GC off and on, {} pairs", o.rounds * GC_PAIRS_PER_ROUND);
    let gc = gc_comparison(data, url, work, &token, &cookies, o).await;

    let mut server = Watasu::spawn(data, url, &[], &work.join(format!("{tag}.log")));
    server.wait_ready().await;
    eprintln!("bench: {name}: landing page");
    let landing_on = landing(work, &server, &token, &cookies, o.seconds, o.warmup).await;
    let logins = if is_sqlite {
        eprintln!("bench: {name}: landing page during {} sign-ins per second", o.logins_per_second);
        let during = Duration::from_secs(o.warmup + o.seconds) + Duration::from_millis(500);
        let (page, logins) = tokio::join!(
            landing(work, &server, &token, &cookies, o.seconds, o.warmup),
            load::logins(&db, &server.base, o.logins_per_second, during)
        );
        Some((page, logins, memory_kib(server.pid(), "VmRSS").unwrap_or(0)))
    } else {
        None
    };
    eprintln!("bench: {name}: code step");
    let (base, file, seconds) = (server.base.clone(), submissions.clone(), o.seconds);
    let work_dir = work.to_owned();
    let code = blocking(move || load::code_step(&work_dir, &base, &file, seconds)).await;
    eprintln!("bench: {name}: 200 download POSTs at once");
    let race = transfer::race(&db, data, url, &server.base, work).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_after_load_kib = memory_kib(server.pid(), "VmRSS").unwrap_or(0);
    tokio::time::sleep(Duration::from_secs(29)).await;
    let rss_30s_after_load_kib = memory_kib(server.pid(), "VmRSS").unwrap_or(0);
    server.stop();
    let instances = if is_sqlite { None } else { Some(scale::instances(data, url, work, &token, &cookies, o).await) };
    // Last: it leaves a million more active shares behind.
    let mut server = Watasu::spawn(data, url, &[], &work.join(format!("{tag}-growth.log")));
    server.wait_ready().await;
    let growth = growth::grow(&db, &server, work, &token, &cookies, o).await;
    server.stop();
    db.close().await;
    BackendFigures {
        name,
        candidate,
        gc,
        landing: landing_on,
        code,
        race,
        transfers,
        logins,
        instances,
        rss_after_load_kib,
        rss_30s_after_load_kib,
        crowds,
        growth,
    }
}

async fn landing(work: &Path, server: &Watasu, token: &str, cookies: &Path, seconds: u64, warmup: u64) -> WrkResult {
    let (work, base, token, cookies) = (work.to_owned(), server.base.clone(), token.to_owned(), cookies.to_owned());
    blocking(move || load::landing(&work, &base, &token, &cookies, seconds, warmup)).await
}

/// The landing page with access-time GC off and on: two servers on the same database, both
/// started and warmed up first, then short runs alternated in ABBA order so that a drift of the
/// machine falls on both alike. Each pair gives a ratio; their median and quartiles are the figure.
async fn gc_comparison(data: &Path, url: &str, work: &Path, token: &str, cookies: &Path, o: &Options) -> GcComparison {
    let seconds = GC_RUN_SECONDS.min(o.seconds);
    let mut figures = GcComparison { seconds, ..GcComparison::default() };
    let mut off = Watasu::spawn(data, url, &["--access-time-gc", "false"], &work.join("gc-off.log"));
    let mut on = Watasu::spawn(data, url, &[], &work.join("gc-on.log"));
    off.wait_ready().await;
    on.wait_ready().await;
    for server in [&off, &on] {
        landing(work, server, token, cookies, o.warmup, 0).await;
    }
    for pair in 0..o.rounds * GC_PAIRS_PER_ROUND {
        let order = if pair % 2 == 0 { [false, true] } else { [true, false] };
        let mut p99 = [0.0; 2];
        for gc_on in order {
            let result = landing(work, if gc_on { &on } else { &off }, token, cookies, seconds, 0).await;
            let (p99s, rps) = if gc_on {
                (&mut figures.on_p99_ms, &mut figures.on_rps)
            } else {
                (&mut figures.off_p99_ms, &mut figures.off_rps)
            };
            p99s.push(result.p99_ms);
            rps.push(result.rps);
            p99[usize::from(gc_on)] = result.p99_ms;
            figures.errors += result.errors;
        }
        figures.pair_ratios.push(p99[1] / p99[0]);
    }
    on.stop();
    off.stop();
    figures
}

/// The transfers on the local store, and the source file for the object store's turn.
async fn transfers(db: &Db, server: &Watasu, data: &Path, url: &str, work: &Path, o: &Options) -> (Transfers, PathBuf) {
    eprintln!("bench: writing the {} MiB source file", o.file_bytes >> 20);
    let source = work.join("source.bin");
    let path = source.clone();
    let size = o.file_bytes;
    blocking(move || transfer::make_source(&path, size)).await;

    eprintln!("bench: dd conv=fsync");
    let (from, to) = (source.clone(), data.join("dd.bin"));
    let dd = blocking(move || transfer::dd(&from, &to)).await;

    eprintln!("bench: upload");
    let (cookie, csrf) = transfer::signed_in(db, 1).await;
    let pid = server.pid();
    let upload_rss_before_kib = memory_kib(pid, "VmRSS").unwrap();
    let before = transfer::stored_files(data);
    let sampler = PeakRss::start(pid);
    let (base, from, answer) = (server.base.clone(), source.clone(), work.join("upload-answer.html"));
    let (c, t) = (cookie.clone(), csrf.clone());
    let (upload, _) = blocking(move || transfer::upload(&base, &c, &t, &from, &answer)).await;
    let upload_peak_kib = sampler.finish();
    let stored = transfer::new_stored_file(data, &before);

    eprintln!("bench: the same upload stored encrypted");
    let mut sealing = Watasu::spawn(data, url, &["--encrypt-files"], &work.join("sqlite-sealing.log"));
    sealing.wait_ready().await;
    let sealed_upload_rss_before_kib = memory_kib(sealing.pid(), "VmRSS").unwrap();
    let before = transfer::stored_files(data);
    let sampler = PeakRss::start(sealing.pid());
    let (base, from, answer) = (sealing.base.clone(), source.clone(), work.join("upload-answer.html"));
    let (c, t) = (cookie.clone(), csrf.clone());
    let (sealed_upload, _) = blocking(move || transfer::upload(&base, &c, &t, &from, &answer)).await;
    let sealed_upload_peak_kib = sampler.finish();
    // Only its speed counts; its share is never downloaded. Its length says it was stored sealed.
    let sealed_stored = transfer::new_stored_file(data, &before);
    let header = Header::new(SEGMENT, [0; NONCE_PREFIX]);
    assert_eq!(std::fs::metadata(&sealed_stored).unwrap().len(), header.sealed_len(o.file_bytes), "not stored sealed");
    std::fs::remove_file(sealed_stored).unwrap();

    eprintln!("bench: upload through tus, straight and through nginx with a 100 MB cap");
    let sampler = PeakRss::start(pid);
    let before = transfer::stored_files(data);
    let (tus_direct, _) = transfer::upload_tus(&server.base, &cookie, &csrf, &source, TUS_CHUNK).await;
    let tus_stored = transfer::new_stored_file(data, &before);
    let upstream = server.base.trim_start_matches("http://").to_owned();
    let proxy = Nginx::proxying(&work.join("nginx-proxy"), &upstream, "100m");
    let proxied_base = format!("http://127.0.0.1:{}", proxy.port);
    let before = transfer::stored_files(data);
    let (tus_proxied, _) = transfer::upload_tus(&proxied_base, &cookie, &csrf, &source, TUS_CHUNK).await;
    proxy.stop();
    let tus_peak_kib = sampler.finish();
    // Only its speed counts; its share is never downloaded.
    std::fs::remove_file(transfer::new_stored_file(data, &before)).unwrap();

    eprintln!("bench: downloads against nginx, quiet and beside a busy neighbour");
    assert_eq!(std::fs::metadata(&stored).unwrap().len(), o.file_bytes, "the stored file has the wrong size");
    let downloads = downloads::compare(db, server, &sealing, data, &stored, work, o.rounds).await;
    sealing.stop();
    eprintln!("bench: the ZIP of {} files against one file of the same size", bundles::FILES);
    let bundle = bundles::compare(db, server, data, &stored, work, o.rounds).await;
    // The downloads used up the shares; their files would be collected after the delivery grace.
    std::fs::remove_file(&stored).unwrap();
    std::fs::remove_file(&tus_stored).unwrap();
    let figures = Transfers {
        downloads,
        bundle,
        upload,
        dd,
        upload_rss_before_kib,
        upload_peak_kib,
        sealed_upload,
        sealed_upload_rss_before_kib,
        sealed_upload_peak_kib,
        tus_direct,
        tus_proxied,
        tus_peak_kib,
        object_store: scale::ObjectStoreTransfers::default(),
    };
    (figures, source)
}
