//! The one-time download against nginx's sendfile on the same file, alternated round by round on
//! a quiet machine and again beside a neighbour that keeps one core busy; the same download of the
//! file stored encrypted, in the same rounds; and the plaintext download resumed with `Range`.
//! Each watasu download needs a share of its own (a share downloads once): they are made on hard
//! links of one stored file, and of one sealed copy of it.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
};

use watasu::{
    db::Db,
    secret::random_token,
    share::{ShareLinks, ShareRepository},
    storage::{StoredFile, sealed::WrappedKey},
};

use super::{
    blocking, load,
    procs::{Nginx, PeakRss, Watasu},
    samples::Samples,
    sealed::{self, SealedCopy},
    transfer::{self, Transfer},
};

/// MB/s of each kind of download, quiet and beside a busy neighbour.
#[derive(Default)]
pub struct Downloads {
    pub watasu: Samples,
    pub sealed: Samples,
    pub nginx: Samples,
    pub resumed: Samples,
    pub busy_watasu: Samples,
    pub busy_sealed: Samples,
    pub busy_nginx: Samples,
    /// Each round's watasu over nginx, quiet and busy; the same of the encrypted download.
    pub ratios: Samples,
    pub busy_ratios: Samples,
    pub sealed_ratios: Samples,
    pub busy_sealed_ratios: Samples,
    pub peak_kib: u64,
    pub rss_before_kib: u64,
    /// The server of the encrypted downloads (`--encrypt-files`).
    pub sealed_peak_kib: u64,
    pub sealed_rss_before_kib: u64,
}

/// `rounds` rounds of (nginx, watasu, watasu encrypted, watasu resumed) on `stored`, quiet, then
/// as many beside a busy neighbour. The encrypted downloads are `sealing`'s, a server with
/// `--encrypt-files` on the same data, so that each server's peak RSS is its kind's.
pub async fn compare(
    db: &Db,
    server: &Watasu,
    sealing: &Watasu,
    data: &Path,
    stored: &Path,
    work: &Path,
    rounds: usize,
) -> Downloads {
    let copy = SealedCopy::make(stored, work.join("sealed.bin"), watasu::storage::sealed::SEGMENT).await;
    check_sealed_download(db, sealing, data, stored, &copy).await;
    let nginx = Nginx::serving(&work.join("nginx"), stored.parent().unwrap());
    let url = format!("http://127.0.0.1:{}/{}", nginx.port, stored.file_name().unwrap().to_str().unwrap());
    let rss = |server: &Watasu| super::procs::memory_kib(server.pid(), "VmRSS").unwrap();
    let mut figures =
        Downloads { rss_before_kib: rss(server), sealed_rss_before_kib: rss(sealing), ..Downloads::default() };
    let (sampler, sealed_sampler) = (PeakRss::start(server.pid()), PeakRss::start(sealing.pid()));
    for round in 0..rounds * 2 {
        let busy = round >= rounds;
        let neighbour = busy.then(Neighbour::start);
        let plain = {
            let url = url.clone();
            blocking(move || transfer::download_plain(&url)).await
        };
        let whole = download(db, server, &share_of(db, data, stored).await, stored, false, work).await;
        let encrypted = download(db, sealing, &sealed::share_of(db, data, &copy).await, stored, false, work).await;
        drop(neighbour);
        let (nginx, watasu, sealed, ratios, sealed_ratios) = if busy {
            let f = &mut figures;
            (&mut f.busy_nginx, &mut f.busy_watasu, &mut f.busy_sealed, &mut f.busy_ratios, &mut f.busy_sealed_ratios)
        } else {
            let f = &mut figures;
            (&mut f.nginx, &mut f.watasu, &mut f.sealed, &mut f.ratios, &mut f.sealed_ratios)
        };
        nginx.push(plain.mb_per_s());
        watasu.push(whole.mb_per_s());
        sealed.push(encrypted.mb_per_s());
        ratios.push(whole.mb_per_s() / plain.mb_per_s());
        sealed_ratios.push(encrypted.mb_per_s() / plain.mb_per_s());
        if !busy {
            let token = share_of(db, data, stored).await;
            figures.resumed.push(download(db, server, &token, stored, true, work).await.mb_per_s());
        }
    }
    figures.peak_kib = sampler.finish();
    figures.sealed_peak_kib = sealed_sampler.finish();
    nginx.stop();
    copy.remove();
    figures
}

/// One encrypted download checked whole: its bytes' SHA-256 is the plaintext's.
async fn check_sealed_download(db: &Db, sealing: &Watasu, data: &Path, stored: &Path, copy: &SealedCopy) {
    let token = sealed::share_of(db, data, copy).await;
    let (cookie, csrf) = transfer::granted(db, &token).await;
    let (base, stored) = (sealing.base.clone(), stored.to_owned());
    let (downloaded, plaintext) =
        blocking(move || (sealed::sha256_of_download(&base, &token, &cookie, &csrf), sealed::sha256_of_file(&stored)))
            .await;
    assert_eq!(downloaded, plaintext, "the encrypted download's bytes differ from the plaintext's");
}

/// Segment sizes of sealed files compared: MB/s of encrypted downloads of `stored` sealed in
/// segments of each size, alternated round by round (quiet machine only).
pub async fn segment_sizes(
    db: &Db,
    sealing: &Watasu,
    data: &Path,
    stored: &Path,
    work: &Path,
    sizes: &[u32],
    rounds: usize,
) -> Vec<(u32, Samples)> {
    let mut copies = Vec::new();
    for &size in sizes {
        copies
            .push((SealedCopy::make(stored, work.join(format!("sealed-{size}.bin")), size).await, Samples::default()));
    }
    for round in 0..rounds {
        // Each round starts with another size, so that a drift of the machine falls on all alike.
        for n in 0..copies.len() {
            let (copy, samples) = &mut copies[(round + n) % sizes.len()];
            let token = sealed::share_of(db, data, copy).await;
            samples.push(download(db, sealing, &token, stored, false, work).await.mb_per_s());
        }
    }
    copies
        .into_iter()
        .map(|(copy, samples)| {
            let size = copy.segment;
            copy.remove();
            (size, samples)
        })
        .collect()
}

/// One download of the share of `token` (a file of the size of `stored`): whole, or cut at half
/// and resumed.
async fn download(db: &Db, server: &Watasu, token: &str, stored: &Path, resumed: bool, work: &Path) -> Transfer {
    let (cookie, csrf) = transfer::granted(db, token).await;
    let (base, work, token) = (server.base.clone(), work.to_owned(), token.to_owned());
    let size = std::fs::metadata(stored).unwrap().len();
    let moved = blocking(move || {
        if resumed {
            transfer::download_resumed(transfer::Curl::HERE, &base, &token, &cookie, &csrf, size, &work)
        } else {
            transfer::download_watasu(&base, &token, &cookie, &csrf)
        }
    })
    .await;
    assert_eq!(moved.bytes, size, "the download was cut short");
    moved
}

/// A new share whose file is a hard link of `stored`; returns its link token.
pub async fn share_of(db: &Db, data: &Path, stored: &Path) -> String {
    let size_bytes = std::fs::metadata(stored).unwrap().len();
    share_of_link(db, data, stored, size_bytes, |_| None).await
}

/// A new share of `size_bytes` whose file is a hard link of `file` under a new storage key,
/// stored encrypted when `sealed` gives the data key wrapped for that key; returns its link token.
pub async fn share_of_link(
    db: &Db,
    data: &Path,
    file: &Path,
    size_bytes: u64,
    sealed: impl FnOnce(&str) -> Option<WrappedKey>,
) -> String {
    let key = random_token().expose().to_owned();
    std::fs::hard_link(file, data.join("files").join(&key)).unwrap();
    let sealed = sealed(&key);
    let new = load::new_share(1, StoredFile { key, size_bytes, sha256: "0".repeat(64), crc32: 0, sealed }, "big.bin");
    let issued = ShareLinks::new(ShareRepository::new(db.clone())).issue(&new).await.unwrap().remove(0);
    issued.token.expose().to_owned()
}

/// A process that keeps one core busy, as a neighbour on a shared machine does; stopped when
/// dropped.
struct Neighbour(Child);

impl Neighbour {
    fn start() -> Self {
        let child = Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .stdin(Stdio::null())
            .spawn()
            .expect("starting the busy neighbour");
        Self(child)
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
