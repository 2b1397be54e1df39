//! Past one machine: the big transfers through an S3-compatible store (s3s-fs on this machine)
//! beside the local disk's, and the landing page through nginx balancing two instances against
//! the same nginx in front of one.

use std::path::{Path, PathBuf};

use watasu::db::Db;

use super::{
    Options, TUS_CHUNK, blocking,
    load::{self, WrkResult},
    procs::{Nginx, PeakRss, Watasu},
    s3_servers::S3Server,
    transfer::{self, Transfer},
};

/// Transfers with the files in the object store.
#[derive(Default)]
pub struct ObjectStoreTransfers {
    pub upload: Transfer,
    pub tus: Transfer,
    pub download: Transfer,
    pub download_resumed: Transfer,
    pub download_peak_kib: u64,
}

/// The landing page through nginx in front of one instance and of two (one PostgreSQL).
pub struct Instances {
    pub one: WrkResult,
    pub two: WrkResult,
}

/// The multipart upload, the tus upload and the downloads of `source` with `--storage s3://…`.
pub async fn object_store_transfers(
    db: &Db,
    data: &Path,
    url: &str,
    work: &Path,
    source: &Path,
) -> ObjectStoreTransfers {
    let root = work.join("s3");
    let s3 = S3Server::s3s_fs(&root);
    let env = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let log = work.join("sqlite-s3.log");
    let mut server = Watasu::spawn_with_env(data, url, &["--storage", "s3://bench/files"], &env, &log);
    server.wait_ready().await;
    let size = std::fs::metadata(source).unwrap().len();

    eprintln!("bench: upload into the object store");
    let (cookie, csrf) = transfer::signed_in(db, 1).await;
    let (base, from, answer) = (server.base.clone(), source.to_owned(), work.join("s3-upload-answer.html"));
    let (c, t) = (cookie.clone(), csrf.clone());
    let (upload, token) = blocking(move || transfer::upload(&base, &c, &t, &from, &answer)).await;
    eprintln!("bench: tus upload into the object store");
    let (tus, resumable_token) = transfer::upload_tus(&server.base, &cookie, &csrf, source, TUS_CHUNK).await;

    eprintln!("bench: downloads from the object store");
    let (cookie, csrf) = transfer::granted(db, &token).await;
    let sampler = PeakRss::start(server.pid());
    let base = server.base.clone();
    let download = blocking(move || transfer::download_watasu(&base, &token, &cookie, &csrf)).await;
    let download_peak_kib = sampler.finish();
    assert_eq!(download.bytes, size, "the download from the object store was cut short");
    let (cookie, csrf) = transfer::granted(db, &resumable_token).await;
    let (base, scratch) = (server.base.clone(), work.to_owned());
    let download_resumed = blocking(move || {
        transfer::download_resumed(transfer::Curl::HERE, &base, &resumable_token, &cookie, &csrf, size, &scratch)
    })
    .await;
    assert_eq!(download_resumed.bytes, size, "the resumed download from the object store was cut short");
    server.stop();
    drop(s3);
    ObjectStoreTransfers { upload, tus, download, download_resumed, download_peak_kib }
}

/// The landing page through nginx, first balancing over one instance, then over two.
pub async fn instances(data: &Path, url: &str, work: &Path, token: &str, cookies: &Path, o: &Options) -> Instances {
    let spawn = |n: usize| {
        let log = work.join(format!("postgres-instance-{n}.log"));
        Watasu::spawn(&instance_dir(data, n), url, &[], &log)
    };
    let mut first = spawn(1);
    first.wait_ready().await;
    eprintln!("bench: PostgreSQL: landing page through nginx, one instance");
    let one = through_nginx(work, &[&first], token, cookies, o).await;
    let mut second = spawn(2);
    second.wait_ready().await;
    eprintln!("bench: PostgreSQL: landing page through nginx, two instances");
    let two = through_nginx(work, &[&first, &second], token, cookies, o).await;
    first.stop();
    second.stop();
    Instances { one, two }
}

/// Each instance's own data folder (its key comes from the shared `--secret-key`).
fn instance_dir(data: &Path, n: usize) -> PathBuf {
    let dir = data.join(format!("instance-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn through_nginx(work: &Path, servers: &[&Watasu], token: &str, cookies: &Path, o: &Options) -> WrkResult {
    let upstreams: Vec<String> = servers.iter().map(|s| s.base.trim_start_matches("http://").to_owned()).collect();
    let proxy = Nginx::balancing(&work.join(format!("nginx-{}", servers.len())), &upstreams);
    let base = format!("http://127.0.0.1:{}", proxy.port);
    let (work, token, cookies) = (work.to_owned(), token.to_owned(), cookies.to_owned());
    let (seconds, warmup) = (o.seconds, o.warmup);
    let result = blocking(move || load::landing(&work, &base, &token, &cookies, seconds, warmup)).await;
    proxy.stop();
    result
}
