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

mod load;
mod procs;
mod scale;
mod table;
mod transfer;

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use watasu::{db::Db, lifecycle::LifecycleRepository};

use load::{Logins, WrkResult};
use procs::{Nginx, PeakRss, Watasu, memory_kib};
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
            }
        }
    }
}

/// Figures of the big transfers (SQLite only: the database plays no part in moving the bytes).
pub struct Transfers {
    pub download: Transfer,
    pub nginx: Transfer,
    pub download_rss_before_kib: u64,
    pub download_peak_kib: u64,
    pub upload: Transfer,
    pub dd: Transfer,
    pub upload_rss_before_kib: u64,
    pub upload_peak_kib: u64,
    /// The same file through tus in the page's chunk size: straight to watasu, and through nginx
    /// with a 100 MB cap on request bodies.
    pub tus_direct: Transfer,
    pub tus_proxied: Transfer,
    pub tus_peak_kib: u64,
    /// The download cut at half and resumed with a Range request.
    pub download_resumed: Transfer,
    /// The same transfers with the files in an object store.
    pub object_store: scale::ObjectStoreTransfers,
}

/// The new-share page's tus chunk size (static/upload.js).
const TUS_CHUNK: u64 = 50 << 20;

/// Everything measured on one database backend.
pub struct BackendFigures {
    pub name: &'static str,
    pub candidate_query: Duration,
    pub landing_gc_off: WrkResult,
    pub landing: WrkResult,
    pub code: WrkResult,
    pub race: Race,
    pub transfers: Option<Transfers>,
    /// The page under sign-in load, the sign-ins, and the server's RSS right after (KiB).
    pub logins: Option<(WrkResult, Logins, u64)>,
    /// The landing page through nginx with one instance and with two (PostgreSQL only).
    pub instances: Option<scale::Instances>,
    pub rss_after_load_kib: u64,
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

    let report = table::render(&options, &footprint, &[sqlite, postgres], started.elapsed());
    println!("{report}");
    std::fs::write(dir.join("report.md"), &report).unwrap();
    eprintln!("bench: written to {}", dir.join("report.md").display());
}

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
    let candidate_query =
        seed::median_query(&LifecycleRepository::new(db.clone(), Duration::from_secs(900), Duration::from_secs(3600)))
            .await;
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

    let transfers = if is_sqlite {
        let mut server = Watasu::spawn(data, url, &[], &work.join(format!("{tag}-transfers.log")));
        server.wait_ready().await;
        let (mut figures, source) = transfers(&db, &server, data, work, o).await;
        server.stop();
        figures.object_store = scale::object_store_transfers(&db, data, url, work, &source).await;
        std::fs::remove_file(&source).unwrap();
        Some(figures)
    } else {
        None
    };

    // GC off and on back to back, each on a freshly started server.
    eprintln!("bench: {name}: landing page, access-time GC off");
    let mut server = Watasu::spawn(data, url, &["--access-time-gc", "false"], &work.join(format!("{tag}-gc-off.log")));
    server.wait_ready().await;
    let landing_gc_off = landing(work, &server, &token, &cookies, o).await;
    server.stop();

    let mut server = Watasu::spawn(data, url, &[], &work.join(format!("{tag}.log")));
    server.wait_ready().await;
    eprintln!("bench: {name}: landing page, access-time GC on");
    let landing_on = landing(work, &server, &token, &cookies, o).await;
    let logins = if is_sqlite {
        eprintln!("bench: {name}: landing page during {} sign-ins per second", o.logins_per_second);
        let during = Duration::from_secs(o.warmup + o.seconds) + Duration::from_millis(500);
        let (page, logins) = tokio::join!(
            landing(work, &server, &token, &cookies, o),
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
    server.stop();
    let instances = if is_sqlite { None } else { Some(scale::instances(data, url, work, &token, &cookies, o).await) };
    db.close().await;
    BackendFigures {
        name,
        candidate_query,
        landing_gc_off,
        landing: landing_on,
        code,
        race,
        transfers,
        logins,
        instances,
        rss_after_load_kib,
    }
}

async fn landing(work: &Path, server: &Watasu, token: &str, cookies: &Path, o: &Options) -> WrkResult {
    let (work, base, token, cookies) = (work.to_owned(), server.base.clone(), token.to_owned(), cookies.to_owned());
    let (seconds, warmup) = (o.seconds, o.warmup);
    blocking(move || load::landing(&work, &base, &token, &cookies, seconds, warmup)).await
}

/// The transfers on the local store, and the source file for the object store's turn.
async fn transfers(db: &Db, server: &Watasu, data: &Path, work: &Path, o: &Options) -> (Transfers, PathBuf) {
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
    let (upload, token) = blocking(move || transfer::upload(&base, &c, &t, &from, &answer)).await;
    let upload_peak_kib = sampler.finish();
    let stored = transfer::new_stored_file(data, &before);

    eprintln!("bench: upload through tus, straight and through nginx with a 100 MB cap");
    let sampler = PeakRss::start(pid);
    let before = transfer::stored_files(data);
    let (tus_direct, resumable_token) = transfer::upload_tus(&server.base, &cookie, &csrf, &source, TUS_CHUNK).await;
    let resumable = transfer::new_stored_file(data, &before);
    let upstream = server.base.trim_start_matches("http://").to_owned();
    let proxy = Nginx::proxying(&work.join("nginx-proxy"), &upstream, "100m");
    let proxied_base = format!("http://127.0.0.1:{}", proxy.port);
    let before = transfer::stored_files(data);
    let (tus_proxied, _) = transfer::upload_tus(&proxied_base, &cookie, &csrf, &source, TUS_CHUNK).await;
    proxy.stop();
    let tus_peak_kib = sampler.finish();
    // Only its speed counts; its share is never downloaded.
    std::fs::remove_file(transfer::new_stored_file(data, &before)).unwrap();

    eprintln!("bench: downloads");
    assert_eq!(std::fs::metadata(&stored).unwrap().len(), o.file_bytes, "the stored file has the wrong size");
    let nginx = Nginx::serving(&work.join("nginx"), stored.parent().unwrap());
    let url = format!("http://127.0.0.1:{}/{}", nginx.port, stored.file_name().unwrap().to_str().unwrap());
    let mut nginx_runs = Vec::new();
    for _ in 0..3 {
        let url = url.clone();
        nginx_runs.push(blocking(move || transfer::download_plain(&url)).await);
    }
    nginx.stop();
    nginx_runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    let (cookie, csrf) = transfer::granted(db, &token).await;
    let download_rss_before_kib = memory_kib(pid, "VmRSS").unwrap();
    let sampler = PeakRss::start(pid);
    let base = server.base.clone();
    let download = blocking(move || transfer::download_watasu(&base, &token, &cookie, &csrf)).await;
    let download_peak_kib = sampler.finish();
    assert_eq!(download.bytes, o.file_bytes, "the download was cut short");
    let (cookie, csrf) = transfer::granted(db, &resumable_token).await;
    let (base, scratch) = (server.base.clone(), work.to_owned());
    let download_resumed =
        blocking(move || transfer::download_resumed(&base, &resumable_token, &cookie, &csrf, size, &scratch)).await;
    assert_eq!(download_resumed.bytes, o.file_bytes, "the resumed download was cut short");
    // The downloads used up the shares; their files would be collected after the delivery grace.
    std::fs::remove_file(&stored).unwrap();
    std::fs::remove_file(&resumable).unwrap();
    let figures = Transfers {
        download,
        nginx: nginx_runs[1],
        download_rss_before_kib,
        download_peak_kib,
        upload,
        dd,
        upload_rss_before_kib,
        upload_peak_kib,
        tus_direct,
        tus_proxied,
        tus_peak_kib,
        download_resumed,
        object_store: scale::ObjectStoreTransfers::default(),
    };
    (figures, source)
}
