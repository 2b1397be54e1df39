//! The one-time download against nginx's sendfile on the same file, alternated round by round on
//! a quiet machine and again beside a neighbour that keeps one core busy; and the same download
//! resumed with `Range`. Each watasu download needs a share of its own (a share downloads once):
//! they are made on hard links of one stored file.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
};

use watasu::{
    db::Db,
    secret::random_token,
    share::{ShareLinks, ShareRepository},
    storage::StoredFile,
};

use super::{
    blocking, load,
    procs::{Nginx, PeakRss, Watasu},
    samples::Samples,
    transfer::{self, Transfer},
};

/// MB/s of each kind of download, quiet and beside a busy neighbour.
#[derive(Default)]
pub struct Downloads {
    pub watasu: Samples,
    pub nginx: Samples,
    pub resumed: Samples,
    pub busy_watasu: Samples,
    pub busy_nginx: Samples,
    /// Each round's watasu over nginx, quiet and busy.
    pub ratios: Samples,
    pub busy_ratios: Samples,
    pub peak_kib: u64,
    pub rss_before_kib: u64,
}

/// `rounds` rounds of (nginx, watasu, watasu resumed) on `stored`, quiet, then as many beside a
/// busy neighbour.
pub async fn compare(db: &Db, server: &Watasu, data: &Path, stored: &Path, work: &Path, rounds: usize) -> Downloads {
    let nginx = Nginx::serving(&work.join("nginx"), stored.parent().unwrap());
    let url = format!("http://127.0.0.1:{}/{}", nginx.port, stored.file_name().unwrap().to_str().unwrap());
    let mut figures =
        Downloads { rss_before_kib: super::procs::memory_kib(server.pid(), "VmRSS").unwrap(), ..Downloads::default() };
    let sampler = PeakRss::start(server.pid());
    for round in 0..rounds * 2 {
        let busy = round >= rounds;
        let neighbour = busy.then(Neighbour::start);
        let plain = {
            let url = url.clone();
            blocking(move || transfer::download_plain(&url)).await
        };
        let whole = download(db, server, data, stored, false, work).await;
        drop(neighbour);
        if busy {
            figures.busy_nginx.push(plain.mb_per_s());
            figures.busy_watasu.push(whole.mb_per_s());
            figures.busy_ratios.push(whole.mb_per_s() / plain.mb_per_s());
        } else {
            figures.nginx.push(plain.mb_per_s());
            figures.watasu.push(whole.mb_per_s());
            figures.ratios.push(whole.mb_per_s() / plain.mb_per_s());
            figures.resumed.push(download(db, server, data, stored, true, work).await.mb_per_s());
        }
    }
    figures.peak_kib = sampler.finish();
    nginx.stop();
    figures
}

/// One download of a new share of `stored`: whole, or cut at half and resumed.
async fn download(db: &Db, server: &Watasu, data: &Path, stored: &Path, resumed: bool, work: &Path) -> Transfer {
    let token = share_of(db, data, stored).await;
    let (cookie, csrf) = transfer::granted(db, &token).await;
    let (base, work) = (server.base.clone(), work.to_owned());
    let size = std::fs::metadata(stored).unwrap().len();
    let moved = blocking(move || {
        if resumed {
            transfer::download_resumed(&base, &token, &cookie, &csrf, size, &work)
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
    let key = random_token().expose().to_owned();
    std::fs::hard_link(stored, data.join("files").join(&key)).unwrap();
    let size_bytes = std::fs::metadata(stored).unwrap().len();
    let new =
        load::new_share(1, StoredFile { key, size_bytes, sha256: "0".repeat(64), crc32: 0, sealed: None }, "big.bin");
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
