//! Many at once: simultaneous downloads of a 100 MiB share against one download alone, and
//! simultaneous tus uploads with the server killed (SIGKILL) halfway and every upload resumed.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use futures_util::StreamExt;
use watasu::{db::Db, storage::mapped_bound};

use super::{
    Options, downloads,
    procs::{PeakRss, Watasu, memory_kib},
    transfer::{self, Transfer},
};

/// What a download holds besides its mapped chunks (`watasu::storage::mapped_bound`): its
/// connection's buffers and its tasks (about 41 KiB measured).
const DOWNLOAD_OWN_KIB: u64 = 64;
/// What a tus PATCH into the local folder may hold: its 256 KiB buffer, tokio's write buffer of
/// the same size, the connection's read buffer (hyper's, up to about 400 KiB), and the
/// allocator's slack around them (about 1.5 MiB measured).
const PATCH_KIB: u64 = 2048;

pub struct Crowds {
    /// The server's RSS before the crowds (KiB).
    pub rss_before_kib: u64,
    pub downloads: usize,
    pub one: Transfer,
    pub all: Transfer,
    pub download_peak_kib: u64,
    /// The anonymous part of the server's RSS at its highest (heap, stacks; no mapped file).
    pub download_anon_kib: u64,
    pub uploads: usize,
    pub upload_bytes: u64,
    pub all_uploads: Transfer,
    pub upload_peak_kib: u64,
    pub upload_anon_kib: u64,
    /// From the kill to the restarted server's `/readyz`.
    pub restart: Duration,
    /// From the kill to the last upload's offset read back (`HEAD`).
    pub all_resumed: Duration,
}

pub async fn crowds(db: &Db, server: &mut Watasu, data: &Path, work: &Path, o: &Options) -> Crowds {
    let (downloads, size) = if o.quick { (50, 16 << 20) } else { (500, 100 << 20) };
    let source = work.join("crowd.bin");
    transfer::make_source(&source, size);
    let rss_before_kib = memory_kib(server.pid(), "VmRSS").unwrap();
    eprintln!("bench: one download of {} MiB, then {downloads} at once", size >> 20);
    let one = download_all(db, server, data, &source, 1).await.0;
    let (all, (download_peak_kib, download_anon_kib)) = download_all(db, server, data, &source, downloads).await;
    std::fs::remove_file(&source).unwrap();

    let (uploads, upload_bytes) = if o.quick { (10, 4 << 20) } else { (100, 20 << 20) };
    eprintln!("bench: {uploads} tus uploads of {} MiB at once, the server killed halfway", upload_bytes >> 20);
    let (all_uploads, (upload_peak_kib, upload_anon_kib), restart, all_resumed) =
        upload_all(db, server, uploads, upload_bytes).await;
    Crowds {
        rss_before_kib,
        downloads,
        one,
        all,
        download_peak_kib,
        download_anon_kib,
        uploads,
        upload_bytes,
        all_uploads,
        upload_peak_kib,
        upload_anon_kib,
        restart,
        all_resumed,
    }
}

/// `count` downloads of shares of `source` started together; the bytes of all of them over the
/// time from the start to the last one's end, and the server's peak RSS meanwhile.
async fn download_all(db: &Db, server: &Watasu, data: &Path, source: &Path, count: usize) -> (Transfer, (u64, u64)) {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut prepared = Vec::new();
    for _ in 0..count {
        let token = downloads::share_of(db, data, source).await;
        let (cookie, csrf) = transfer::granted(db, &token).await;
        prepared.push((token, cookie, csrf));
    }
    let start = Arc::new(tokio::sync::Barrier::new(count + 1));
    let mut tasks = tokio::task::JoinSet::new();
    for (token, cookie, csrf) in prepared {
        let (client, base, start) = (client.clone(), server.base.clone(), start.clone());
        tasks.spawn(async move {
            start.wait().await;
            let claim = client
                .post(format!("{base}/s/{token}/download"))
                .header("Cookie", &cookie)
                .header("Sec-Fetch-Site", "same-origin")
                .form(&[("csrf_token", csrf.as_str())])
                .send()
                .await
                .unwrap();
            assert_eq!(claim.status(), 303, "a claim was refused");
            let file = claim.headers()["location"].to_str().unwrap().to_owned();
            let response = client.get(format!("{base}{file}")).header("Cookie", &cookie).send().await.unwrap();
            assert_eq!(response.status(), 200, "a download was refused");
            let mut body = response.bytes_stream();
            let mut bytes = 0u64;
            while let Some(chunk) = body.next().await {
                bytes += chunk.expect("a download broke off").len() as u64;
            }
            bytes
        });
    }
    let sampler = PeakRss::start(server.pid());
    start.wait().await;
    let started = Instant::now();
    let mut bytes = 0;
    while let Some(moved) = tasks.join_next().await {
        bytes += moved.unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(bytes, count as u64 * std::fs::metadata(source).unwrap().len(), "downloads were cut short");
    (Transfer { bytes, seconds }, sampler.finish_with_anon())
}

/// `count` tus uploads of `size` bytes each in 4 MiB PATCHes, started together; once half of all
/// bytes have arrived the server is killed and restarted, and every upload asks for its offset
/// and goes on from there, as the page's client does.
async fn upload_all(
    db: &Db,
    server: &mut Watasu,
    count: usize,
    size: u64,
) -> (Transfer, (u64, u64), Duration, Duration) {
    let (cookie, csrf) = transfer::signed_in(db, 1).await;
    let client = reqwest::Client::new();
    let arrived = Arc::new(AtomicU64::new(0));
    let killed_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let chunk = vec![7u8; 4 << 20];
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    for _ in 0..count {
        let upload = Upload {
            client: client.clone(),
            base: server.base.clone(),
            cookie: cookie.clone(),
            csrf: csrf.clone(),
            arrived: arrived.clone(),
            killed_at: killed_at.clone(),
        };
        let chunk = bytes::Bytes::from(chunk.clone());
        tasks.spawn(async move { upload.run(size, chunk).await });
    }
    let sampler = PeakRss::start(server.pid());
    let total = count as u64 * size;
    while arrived.load(Ordering::Acquire) < total / 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let kill = Instant::now();
    *killed_at.lock().unwrap() = Some(kill);
    let peak_before = sampler.finish_with_anon();
    server.kill_and_restart();
    let sampler = PeakRss::start(server.pid());
    server.wait_ready().await;
    let restart = kill.elapsed();
    let mut all_resumed = Duration::ZERO;
    while let Some(resumed) = tasks.join_next().await {
        all_resumed = all_resumed.max(resumed.unwrap());
    }
    let seconds = started.elapsed().as_secs_f64();
    let peak_after = sampler.finish_with_anon();
    let peak = (peak_before.0.max(peak_after.0), peak_before.1.max(peak_after.1));
    (Transfer { bytes: total, seconds }, peak, restart, all_resumed)
}

struct Upload {
    client: reqwest::Client,
    base: String,
    cookie: String,
    csrf: String,
    arrived: Arc<AtomicU64>,
    killed_at: Arc<std::sync::Mutex<Option<Instant>>>,
}

impl Upload {
    fn tus(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        request.header("Cookie", &self.cookie).header("X-CSRF-Token", &self.csrf).header("Tus-Resumable", "1.0.0")
    }

    /// Uploads to the end; returns the time from the kill to this upload's offset read back.
    async fn run(&self, size: u64, chunk: bytes::Bytes) -> Duration {
        let created = self.tus(self.client.post(format!("{}/uploads", self.base))).header("Upload-Length", size);
        let created = created.send().await.unwrap();
        assert_eq!(created.status(), 201, "a tus creation was refused");
        let url = format!("{}{}", self.base, created.headers()["location"].to_str().unwrap());
        let (mut offset, mut resumed) = (0u64, Duration::ZERO);
        while offset < size {
            let len = (chunk.len() as u64).min(size - offset);
            let patch = self
                .tus(self.client.patch(&url))
                .header("Content-Type", "application/offset+octet-stream")
                .header("Upload-Offset", offset)
                .body(chunk.slice(..len as usize));
            match patch.send().await {
                Ok(answer) if answer.status() == 204 => {
                    offset = answer.headers()["upload-offset"].to_str().unwrap().parse().unwrap();
                    self.arrived.fetch_add(len, Ordering::AcqRel);
                }
                // The server went away mid-request (or answered while dying): ask where to go on.
                _ => {
                    offset = self.offset_after_kill(&url).await;
                    let killed_at = self.killed_at.lock().unwrap().expect("only the kill breaks a PATCH");
                    resumed = resumed.max(killed_at.elapsed());
                }
            }
        }
        resumed
    }

    /// Polls `HEAD` until the restarted server answers with the offset it kept.
    async fn offset_after_kill(&self, url: &str) -> u64 {
        loop {
            if let Ok(answer) = self.tus(self.client.head(url)).send().await
                && answer.status() == 200
            {
                return answer.headers()["upload-offset"].to_str().unwrap().parse().unwrap();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The crowds' figures, one line each (`WATASU_BENCH_ONLY=crowds`).
pub fn summary(c: &Crowds) -> String {
    format!(
        "before: {:.1} MiB\n{} downloads at once: {:.0} MB/s in all (one alone {:.0}); {} (anonymous {:.1} MiB)\n\
         {} tus uploads at once, killed halfway: {:.0} MB/s; {} (anonymous {:.1} MiB)",
        c.rss_before_kib as f64 / 1024.0,
        c.downloads,
        c.all.mb_per_s(),
        c.one.mb_per_s(),
        against_bound(c.download_peak_kib, c.download_bound_kib()),
        c.download_anon_kib as f64 / 1024.0,
        c.uploads,
        c.all_uploads.mb_per_s(),
        against_bound(c.upload_peak_kib, c.upload_bound_kib()),
        c.upload_anon_kib as f64 / 1024.0,
    )
}

impl Crowds {
    /// The most the downloads may take: the RSS before, their mapped chunks, their own memory.
    pub fn download_bound_kib(&self) -> u64 {
        self.rss_before_kib + (mapped_bound(self.downloads) as u64 >> 10) + self.downloads as u64 * DOWNLOAD_OWN_KIB
    }

    /// The most the uploads may take: the RSS before and each one's PATCH.
    pub fn upload_bound_kib(&self) -> u64 {
        self.rss_before_kib + self.uploads as u64 * PATCH_KIB
    }
}

/// "peak X MiB ≤ bound Y MiB: met", as the table and the summary print it.
pub fn against_bound(peak_kib: u64, bound_kib: u64) -> String {
    let met = if peak_kib <= bound_kib { "met" } else { "**not met**" };
    format!("server peak RSS {:.1} MiB, bound {:.1} MiB: {met}", peak_kib as f64 / 1024.0, bound_kib as f64 / 1024.0)
}
