//! The object store at its own speed: on Garage and on s3s-fs, in one run and with the same bytes,
//! watasu's one-time download against the store's own plain signed GET (curl `--aws-sigv4`), and
//! the form upload and the tus upload (the page's 50 MiB PATCHes) against a plain multipart upload
//! of the same part size straight to the bucket (object_store's `BufWriter`, as any Rust program
//! would write it: watasu's part size, the writer's default 8 parts in flight). Each round is one
//! of each, their order alternated round by round, and gives each pair's ratio; the server's peak
//! RSS is sampled during each transfer. `WATASU_BENCH_ONLY=store` runs this alone.

use std::{path::Path, sync::Arc, time::Instant};

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::{ObjectStore, buffered::BufWriter, path::Path as ObjectPath};
use tokio::io::AsyncReadExt;
use watasu::{
    db::Db,
    secret::random_token,
    share::{ShareLinks, ShareRepository},
    storage::{StoredFile, object_store::PART_BYTES},
};

use super::{
    TUS_CHUNK, blocking, load,
    procs::{PeakRss, Watasu, cpu_seconds, memory_kib},
    s3_servers::{BUCKET, S3Server},
    samples::{Samples, show_ratios},
    seeded_sqlite,
    transfer::{self, Transfer},
};

/// Rounds of each comparison: each figure a median of three.
const ROUNDS: usize = 3;
/// Where watasu keeps its files in the bucket (the plain uploads go there too, to be downloaded).
const PREFIX: &str = "files";
/// The goals: each ratio's median at least this (issue 38).
pub const DOWNLOAD_GOAL: f64 = 0.9;
pub const FORM_GOAL: f64 = 0.8;
pub const TUS_GOAL: f64 = 0.8;

/// One kind of transfer through watasu beside its reference, in MB/s, round by round.
#[derive(Default)]
pub struct Pair {
    pub watasu: Samples,
    pub reference: Samples,
    /// Each round's watasu over its reference.
    pub ratios: Samples,
    /// The server's highest RSS during any of watasu's transfers of this kind (KiB).
    pub peak_kib: u64,
    /// Where the time goes: CPU seconds per GiB of watasu and of the store during watasu's
    /// transfers, and of the store during the reference's.
    pub watasu_cpu: Samples,
    pub store_cpu: Samples,
    pub reference_store_cpu: Samples,
}

impl Pair {
    fn push(&mut self, watasu: Transfer, reference: Transfer, peak_kib: u64) {
        self.watasu.push(watasu.mb_per_s());
        self.reference.push(reference.mb_per_s());
        self.ratios.push(watasu.mb_per_s() / reference.mb_per_s());
        self.peak_kib = self.peak_kib.max(peak_kib);
    }

    fn push_cpu(&mut self, watasu: Cpu, reference: Cpu) {
        self.watasu_cpu.push(watasu.watasu);
        self.store_cpu.push(watasu.store);
        self.reference_store_cpu.push(reference.store);
    }
}

/// CPU seconds per GiB moved, of watasu and of the store, over one transfer.
#[derive(Clone, Copy)]
struct Cpu {
    watasu: f64,
    store: f64,
}

/// Counts the CPU time watasu and the store use from its start.
struct CpuClock {
    pids: (u32, u32),
    start: (f64, f64),
}

impl CpuClock {
    fn start(watasu: u32, store: u32) -> Self {
        Self { pids: (watasu, store), start: (cpu_seconds(watasu), cpu_seconds(store)) }
    }

    fn per_gib(&self, bytes: u64) -> Cpu {
        let gib = bytes as f64 / (1u64 << 30) as f64;
        Cpu {
            watasu: (cpu_seconds(self.pids.0) - self.start.0) / gib,
            store: (cpu_seconds(self.pids.1) - self.start.1) / gib,
        }
    }
}

/// The figures of one store.
pub struct StoreFigures {
    pub store: &'static str,
    pub bytes: u64,
    /// The server's RSS before its first transfer (KiB).
    pub rss_before_kib: u64,
    pub download: Pair,
    pub form: Pair,
    pub tus: Pair,
}

/// Garage, then s3s-fs, each with a watasu of its own on a fresh SQLite database, moving a file of
/// `bytes` bytes.
pub async fn measure(work: &Path, bytes: u64) -> Vec<StoreFigures> {
    let dir = work.join("store");
    let data = dir.join("data");
    let (db, url) = seeded_sqlite(&data).await;
    let source = dir.join("source.bin");
    let path = source.clone();
    blocking(move || transfer::make_source(&path, bytes)).await;
    let mut figures = Vec::new();
    for garage in [true, false] {
        if garage && !S3Server::garage_installed() {
            // scripts/bench installs it; a run of the bench binary alone may not have it.
            eprintln!("bench: garage is not installed (scripts/install-garage): its figures are left out");
            continue;
        }
        let (root, log) = (dir.join("s3"), work.join("garage.log"));
        let s3 = blocking(move || if garage { S3Server::garage(&root, &log) } else { S3Server::s3s_fs(&root) }).await;
        eprintln!("bench: the object store at its own speed: {}", s3.name);
        figures.push(measure_store(&db, &data, &url, work, &s3, &source).await);
    }
    db.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    figures
}

async fn measure_store(db: &Db, data: &Path, url: &str, work: &Path, s3: &S3Server, source: &Path) -> StoreFigures {
    let env = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let storage = format!("s3://{BUCKET}/{PREFIX}");
    let log = work.join(format!("store-{}.log", s3.name));
    let mut server = Watasu::spawn_with_env(data, url, &["--storage", storage.as_str()], &env, &log);
    server.wait_ready().await;
    let client = s3.client();
    let (cookie, csrf) = transfer::signed_in(db, 1).await;
    let mut f = StoreFigures {
        store: s3.name,
        bytes: std::fs::metadata(source).unwrap().len(),
        rss_before_kib: memory_kib(server.pid(), "VmRSS").unwrap(),
        download: Pair::default(),
        form: Pair::default(),
        tus: Pair::default(),
    };
    let clock = || CpuClock::start(server.pid(), s3.pid());
    for round in 0..ROUNDS {
        let watasu_first = round % 2 == 1;
        // The plain upload's object is also the one both downloads read.
        let key = random_token().expose().to_owned();
        let object = ObjectPath::from(format!("{PREFIX}/{key}"));
        let (mut plain, mut form, mut tus) = (None, None, None);
        for watasu_turn in [watasu_first, !watasu_first] {
            if !watasu_turn {
                let cpu = clock();
                plain = Some((plain_multipart(&client, &object, source).await, cpu.per_gib(f.bytes)));
                continue;
            }
            let (sampler, cpu) = (PeakRss::start(server.pid()), clock());
            let (base, c, t, from) = (server.base.clone(), cookie.clone(), csrf.clone(), source.to_owned());
            let answer = work.join("store-upload-answer.html");
            let moved = blocking(move || transfer::upload(&base, &c, &t, &from, &answer).0).await;
            form = Some((moved, sampler.finish(), cpu.per_gib(f.bytes)));
            let (sampler, cpu) = (PeakRss::start(server.pid()), clock());
            let (moved, _) = transfer::upload_tus(&server.base, &cookie, &csrf, source, TUS_CHUNK).await;
            tus = Some((moved, sampler.finish(), cpu.per_gib(f.bytes)));
        }
        let (plain, plain_cpu) = plain.unwrap();
        let (form, form_peak, form_cpu) = form.unwrap();
        let (tus, tus_peak, tus_cpu) = tus.unwrap();
        f.form.push(form, plain, form_peak);
        f.form.push_cpu(form_cpu, plain_cpu);
        f.tus.push(tus, plain, tus_peak);
        f.tus.push_cpu(tus_cpu, plain_cpu);

        let (mut get, mut download) = (None, None);
        for watasu_turn in [watasu_first, !watasu_first] {
            if !watasu_turn {
                let args = signed_get_args(s3, object.as_ref());
                let cpu = clock();
                get = Some((blocking(move || signed_get(&args)).await, cpu.per_gib(f.bytes)));
                continue;
            }
            let token = share_of_object(db, &key, f.bytes).await;
            let (c, t) = transfer::granted(db, &token).await;
            let (sampler, cpu) = (PeakRss::start(server.pid()), clock());
            let base = server.base.clone();
            let moved = blocking(move || transfer::download_watasu(&base, &token, &c, &t)).await;
            download = Some((moved, sampler.finish(), cpu.per_gib(f.bytes)));
        }
        let (get, get_cpu) = get.unwrap();
        let (download, download_peak, download_cpu) = download.unwrap();
        assert_eq!(get.bytes, f.bytes, "the plain GET was cut short");
        assert_eq!(download.bytes, f.bytes, "the download was cut short");
        f.download.push(download, get, download_peak);
        f.download.push_cpu(download_cpu, get_cpu);
        remove_all(&client).await;
    }
    server.stop();
    f
}

/// `source` into the object at `path` as a multipart upload in watasu's part size.
async fn plain_multipart(client: &Arc<dyn ObjectStore>, path: &ObjectPath, source: &Path) -> Transfer {
    let started = Instant::now();
    let mut file = tokio::fs::File::open(source).await.unwrap();
    let mut writer = BufWriter::with_capacity(client.clone(), path.clone(), PART_BYTES);
    let mut bytes = 0;
    loop {
        let mut chunk = Vec::with_capacity(1 << 20);
        let read = (&mut file).take(1 << 20).read_to_end(&mut chunk).await.unwrap();
        if read == 0 {
            break;
        }
        bytes += read as u64;
        writer.put(Bytes::from(chunk)).await.unwrap();
    }
    tokio::io::AsyncWriteExt::shutdown(&mut writer).await.unwrap();
    Transfer { bytes, seconds: started.elapsed().as_secs_f64() }
}

/// curl's arguments for a plain signed GET of the object at `path`, the bytes thrown away.
fn signed_get_args(s3: &S3Server, path: &str) -> Vec<String> {
    vec![
        "--aws-sigv4".into(),
        format!("aws:amz:{}:s3", s3.region),
        "--user".into(),
        format!("{}:{}", s3.access_key, s3.secret),
        // s3s-fs answers 400 without it; it signs no body.
        "-H".into(),
        "x-amz-content-sha256: UNSIGNED-PAYLOAD".into(),
        "-o".into(),
        "/dev/null".into(),
        "-w".into(),
        "%{http_code} %{size_download} %{time_total}".into(),
        s3.object_url(path),
    ]
}

fn signed_get(args: &[String]) -> Transfer {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let words = transfer::curl(&args);
    assert_eq!(words[0], "200", "the plain signed GET answered {}", words[0]);
    Transfer { bytes: words[1].parse().unwrap(), seconds: words[2].parse().unwrap() }
}

/// A new share whose file is the object under `key`; returns its link token.
async fn share_of_object(db: &Db, key: &str, size_bytes: u64) -> String {
    let stored = StoredFile { key: key.to_owned(), size_bytes, sha256: "0".repeat(64), crc32: 0, sealed: None };
    let new = load::new_share(1, stored, "big.bin");
    let issued = ShareLinks::new(ShareRepository::new(db.clone())).issue(&new).await.unwrap().remove(0);
    issued.token.expose().to_owned()
}

/// Removes every object of the round (uploads, the plain one, markers), so the disk holds one
/// round's bytes at most.
async fn remove_all(client: &Arc<dyn ObjectStore>) {
    let prefix = ObjectPath::from(PREFIX);
    let listed: Vec<_> = client.list(Some(&prefix)).map_ok(|meta| meta.location).try_collect().await.unwrap();
    for path in listed {
        client.delete(&path).await.unwrap();
    }
}

/// The store section of the report: per store, each transfer beside its reference and the ratio
/// beside its goal.
pub fn section(figures: &[StoreFigures]) -> String {
    let Some(first) = figures.first() else { return String::new() };
    let mut out = format!(
        "\n## The object store at its own speed\n\n{} MiB per transfer, each store on this machine, {ROUNDS} \
         rounds alternating watasu and the reference; MB/s as median (lowest–highest), the ratio as the median of \
         the rounds' ratios (quartiles; lowest–highest). References: a plain signed GET with curl \
         (`--aws-sigv4`); a plain multipart upload in {} MiB parts (object_store's `BufWriter`, 8 parts in flight) \
         straight to the bucket. Peak RSS: the server's highest during that kind of transfer.\n\n\
         | Store | Transfer | watasu | Reference | Ratio | Goal | Peak RSS |\n|---|---|---|---|---|---|---|\n",
        first.bytes >> 20,
        PART_BYTES >> 20
    );
    for f in figures {
        let rows = [
            ("one-time download", "plain signed GET", &f.download, DOWNLOAD_GOAL),
            ("form upload", "plain multipart upload", &f.form, FORM_GOAL),
            ("tus upload, 50 MiB PATCHes", "plain multipart upload", &f.tus, TUS_GOAL),
        ];
        for (transfer, reference, pair, goal) in rows {
            let met = if pair.ratios.median() >= goal { "met" } else { "**not met**" };
            out += &format!(
                "| {} | {transfer} | {} | {reference}: {} | {} | ≥ {goal}: {met} | {:.1} MiB ({:.1} MiB before) |\n",
                f.store,
                pair.watasu.show(0, " MB/s"),
                pair.reference.show(0, " MB/s"),
                show_ratios(&pair.ratios),
                pair.peak_kib as f64 / 1024.0,
                f.rss_before_kib as f64 / 1024.0,
            );
        }
    }
    out += "\nWhere the time goes: CPU seconds per GiB moved (medians), of watasu and of the store during \
            watasu's transfer, and of the store during the reference (the reference's own client is not counted).\n\n\
            | Store | Transfer | watasu | Store, with watasu | Store, reference |\n|---|---|---|---|---|\n";
    for f in figures {
        for (transfer, pair) in [("one-time download", &f.download), ("form upload", &f.form), ("tus upload", &f.tus)] {
            out += &format!(
                "| {} | {transfer} | {:.2} | {:.2} | {:.2} |\n",
                f.store,
                pair.watasu_cpu.median(),
                pair.store_cpu.median(),
                pair.reference_store_cpu.median(),
            );
        }
    }
    out
}
