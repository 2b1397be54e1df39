//! The report as one markdown table, each figure beside its reference and their ratio.

use std::time::Duration;

use super::{
    BackendFigures, Footprint, Options, crowds,
    load::WrkResult,
    samples::{ratio, show_ratios},
    store::{self, StoreFigures},
};

/// The empty candidate query's execution time seed 000 reports (PostgreSQL, 200,000 rows).
const SEED_CANDIDATE_MS: f64 = 0.018;

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 { format!("{ms:.3} ms") } else { format!("{ms:.0} ms") }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn page(w: &WrkResult) -> String {
    format!("{:.0} req/s; p50 {:.1} ms, p99 {:.1} ms", w.rps, w.p50_ms, w.p99_ms)
}

fn errors(w: &WrkResult) -> String {
    if w.errors == 0 { "no errors".into() } else { format!("**{} errors**", w.errors) }
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo.lines().find_map(|l| l.strip_prefix("model name")?.split(':').nth(1)).unwrap_or("?").trim();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().next()?.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or("?".into(), |kib| format!("{:.0} GiB RAM", kib as f64 / 1048576.0));
    format!("{cores} cores ({model}), {memory}")
}

pub fn render(
    o: &Options,
    f: &Footprint,
    backends: &[BackendFigures],
    stores: &[StoreFigures],
    took: Duration,
) -> String {
    let file = if o.file_bytes >= 1 << 30 {
        format!("{} GiB", o.file_bytes >> 30)
    } else {
        format!("{} MiB", o.file_bytes >> 20)
    };
    let rows_text = thousands(o.rows);
    let mut lines = vec![
        "| # | Measurement | watasu | Reference | Ratio | Notes |".to_owned(),
        "|---|---|---|---|---|---|".to_owned(),
    ];
    let mut row = |cells: [String; 6]| lines.push(format!("| {} |", cells.join(" | ")));
    for b in backends {
        if let Some(t) = &b.transfers {
            let d = &t.downloads;
            row([
                "1".into(),
                format!("Download of a {file} share over loopback (curl), quiet machine"),
                d.watasu.show(0, " MB/s"),
                format!("nginx, sendfile on: {}", d.nginx.show(0, " MB/s")),
                show_ratios(&d.ratios),
                format!(
                    "rounds alternate nginx and watasu, each round a ratio; watasu peak RSS {} over all its downloads ({} before)",
                    mib(d.peak_kib),
                    mib(d.rss_before_kib)
                ),
            ]);
            row([
                "1".into(),
                "The same, beside a neighbour keeping one core busy".into(),
                d.busy_watasu.show(0, " MB/s"),
                format!("nginx: {}", d.busy_nginx.show(0, " MB/s")),
                show_ratios(&d.busy_ratios),
                "the neighbour is a shell loop started before each round's downloads".into(),
            ]);
            row([
                "1".into(),
                "The same file stored encrypted (`--encrypt-files`), quiet machine".into(),
                d.sealed.show(0, " MB/s"),
                format!(
                    "nginx on the plaintext: {}; plaintext: {}",
                    d.nginx.show(0, " MB/s"),
                    d.watasu.show(0, " MB/s")
                ),
                format!("{} of nginx; plaintext: {}", show_ratios(&d.sealed_ratios), show_ratios(&d.ratios)),
                format!(
                    "in the same rounds; AES-256-GCM in {} KiB segments, bytes checked (SHA-256); peak RSS {} of its \
                     server ({} before)",
                    watasu::storage::sealed::SEGMENT >> 10,
                    mib(d.sealed_peak_kib),
                    mib(d.sealed_rss_before_kib)
                ),
            ]);
            row([
                "1".into(),
                "The encrypted download beside the busy neighbour".into(),
                d.busy_sealed.show(0, " MB/s"),
                format!("nginx: {}; plaintext: {}", d.busy_nginx.show(0, " MB/s"), d.busy_watasu.show(0, " MB/s")),
                format!("{} of nginx; plaintext: {}", show_ratios(&d.busy_sealed_ratios), show_ratios(&d.busy_ratios)),
                "in the same rounds as the plaintext's".into(),
            ]);
            row([
                "1".into(),
                "The same download cut at half and resumed (`Range`, `If-Range`)".into(),
                d.resumed.show(0, " MB/s"),
                format!("uninterrupted: {}", d.watasu.show(0, " MB/s")),
                ratio(&d.resumed, &d.watasu),
                "the claim, the first half and the rest, timed together".into(),
            ]);
            let z = &t.bundle;
            row([
                "1".into(),
                format!(
                    "ZIP of a handover of {} files of {} MiB, against one {file} file",
                    super::bundles::FILES,
                    z.part_bytes >> 20
                ),
                z.zip.show(0, " MB/s"),
                format!("one file: {}", z.single.show(0, " MB/s")),
                show_ratios(&z.ratios),
                "the claim and the whole streamed ZIP (stored entries); rounds alternate the two, each round a ratio"
                    .into(),
            ]);
            row([
                "2".into(),
                format!("Upload of {file} through the dashboard form (curl, multipart)"),
                format!("{:.0} MB/s", t.upload.mb_per_s()),
                format!("`dd bs=1M conv=fsync`, same disk: {:.0} MB/s", t.dd.mb_per_s()),
                format!("{:.2}", t.upload.mb_per_s() / t.dd.mb_per_s()),
                format!(
                    "watasu peak RSS {} during it ({} before); stored, hashed (SHA-256), fsynced, renamed",
                    mib(t.upload_peak_kib),
                    mib(t.upload_rss_before_kib)
                ),
            ]);
            row([
                "2".into(),
                "The same upload stored encrypted (`--encrypt-files`)".into(),
                format!("{:.0} MB/s", t.sealed_upload.mb_per_s()),
                format!("plaintext: {:.0} MB/s", t.upload.mb_per_s()),
                format!("{:.2}", t.sealed_upload.mb_per_s() / t.upload.mb_per_s()),
                format!(
                    "a second server on the same data, right after the plaintext upload; its peak RSS {} ({} before)",
                    mib(t.sealed_upload_peak_kib),
                    mib(t.sealed_upload_rss_before_kib)
                ),
            ]);
            row([
                "2".into(),
                format!("Upload of {file} through tus in 50 MiB PATCHes, through nginx capping bodies at 100 MB"),
                format!("{:.0} MB/s", t.tus_proxied.mb_per_s()),
                format!(
                    "multipart: {:.0} MB/s; tus straight to watasu: {:.0} MB/s; dd: {:.0} MB/s",
                    t.upload.mb_per_s(),
                    t.tus_direct.mb_per_s(),
                    t.dd.mb_per_s()
                ),
                format!(
                    "{:.2} of multipart, {:.2} of dd",
                    t.tus_proxied.mb_per_s() / t.upload.mb_per_s(),
                    t.tus_proxied.mb_per_s() / t.dd.mb_per_s()
                ),
                format!(
                    "from the creation request to the created page; watasu peak RSS {} during both",
                    mib(t.tus_peak_kib)
                ),
            ]);
            let s3 = &t.object_store;
            row([
                "7".into(),
                format!("Download of a {file} share from the object store (s3s-fs on this machine)"),
                format!("{:.0} MB/s", s3.download.mb_per_s()),
                format!("local disk: {:.0} MB/s (median)", d.watasu.median()),
                format!("{:.2}", s3.download.mb_per_s() / d.watasu.median()),
                format!(
                    "watasu peak RSS {}; resumed with `Range`: {:.0} MB/s ({:.2} of local)",
                    mib(s3.download_peak_kib),
                    s3.download_resumed.mb_per_s(),
                    s3.download_resumed.mb_per_s() / d.resumed.median()
                ),
            ]);
            row([
                "7".into(),
                format!("Upload of {file} into the object store: form, and tus in 50 MiB PATCHes"),
                format!("form {:.0} MB/s; tus {:.0} MB/s", s3.upload.mb_per_s(), s3.tus.mb_per_s()),
                format!("local disk: form {:.0} MB/s; tus {:.0} MB/s", t.upload.mb_per_s(), t.tus_direct.mb_per_s()),
                format!(
                    "{:.2}; {:.2}",
                    s3.upload.mb_per_s() / t.upload.mb_per_s(),
                    s3.tus.mb_per_s() / t.tus_direct.mb_per_s()
                ),
                "8 MiB multipart parts; tus pieces are joined into the file at the last PATCH".into(),
            ]);
        }
    }
    for b in backends {
        row([
            "3".into(),
            format!("Landing page `GET /s/{{token}}`, {}", b.name),
            page(&b.landing),
            "—".into(),
            "—".into(),
            format!("{rows_text} purged rows; 64 returning visitors' sessions; {}", errors(&b.landing)),
        ]);
        row([
            "3".into(),
            format!("Code step `POST /s/{{token}}/code`, {}", b.name),
            page(&b.code),
            "—".into(),
            "—".into(),
            format!(
                "each request a right code for its own share and session ({} prepared): verify, consume, \
                 new session id, grant, 303; {}",
                thousands(o.code_shares as u64),
                errors(&b.code)
            ),
        ]);
    }
    for b in backends {
        let c = &b.candidate;
        row([
            "4".into(),
            format!("GC candidate query finding nothing, inside the database, {}", b.name),
            c.execution_ms.show(4, " ms"),
            format!("seed 000: {SEED_CANDIDATE_MS} ms at 200,000 rows"),
            format!("{:.2}", c.execution_ms.median() / SEED_CANDIDATE_MS),
            format!(
                "{rows_text} purged rows and {} live shares (the code step's); {}; the round trip the server waits for: {}",
                thousands(o.code_shares as u64),
                if b.name == "PostgreSQL" {
                    "`EXPLAIN (ANALYZE, TIMING OFF)` execution time"
                } else {
                    "20,000 runs inside one statement, less the same loop around a constant"
                },
                c.round_trip_ms.show(3, " ms")
            ),
        ]);
        let gc = &b.gc;
        row([
            "4".into(),
            format!("Landing page p99, access-time GC on vs off, {}", b.name),
            format!("on: p99 {}", gc.on_p99_ms.show(1, " ms")),
            format!("off: p99 {}", gc.off_p99_ms.show(1, " ms")),
            show_ratios(&gc.pair_ratios),
            format!(
                "two servers on one database, both warmed up; {} s runs in pairs, ABBA order; the ratio is each \
                 pair's on over off; req/s on {:.0}, off {:.0} (medians); GC passes after responses, at most one \
                 every 200 ms; {}",
                gc.seconds,
                gc.on_rps.median(),
                gc.off_rps.median(),
                if gc.errors == 0 { "no errors".to_owned() } else { format!("**{} errors**", gc.errors) }
            ),
        ]);
    }
    for b in backends {
        if let Some((during, logins, rss_after)) = &b.logins {
            row([
                "5".into(),
                format!("Landing page p99 during {} sign-ins per second, {}", o.logins_per_second, b.name),
                format!("p99 {:.1} ms, {:.0} req/s", during.p99_ms, during.rps),
                format!("without sign-ins: p99 {:.1} ms, {:.0} req/s", b.landing.p99_ms, b.landing.rps),
                format!("{:.2}", during.p99_ms / b.landing.p99_ms),
                format!(
                    "{} sign-ins ({:.1}/s), {} answered; each verifies an argon2id hash (19 MiB); server RSS \
                     right after: {}; {}",
                    logins.sent,
                    logins.per_second,
                    logins.answered_200,
                    mib(*rss_after),
                    errors(during)
                ),
            ]);
        }
    }
    for b in backends {
        if let Some(i) = &b.instances {
            row([
                "7".into(),
                format!("Landing page through nginx round-robin, two instances vs one, {}", b.name),
                format!("two: {}", page(&i.two)),
                format!("one: {}", page(&i.one)),
                format!("{:.2}", i.two.rps / i.one.rps),
                format!("one PostgreSQL; nginx, wrk and the instances share this machine's cores; {}", errors(&i.two)),
            ]);
        }
    }
    let stripped = f.stripped_bytes.map_or(String::new(), |b| format!("; {:.1} MB stripped", b as f64 / 1e6));
    row([
        "6".into(),
        "Idle memory (RSS)".into(),
        mib(f.idle_rss_kib),
        "—".into(),
        "—".into(),
        format!(
            "1 s after ready, fresh SQLite; 1 s after the load runs, then 30 s after: {}",
            backends
                .iter()
                .map(|b| format!("{} {} → {}", b.name, mib(b.rss_after_load_kib), mib(b.rss_30s_after_load_kib)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ]);
    row([
        "6".into(),
        "Start to `/readyz` 200".into(),
        format!("{} first start, {} restart", ms(f.first_ready), ms(f.restart_ready)),
        "—".into(),
        "—".into(),
        "first: creates the database, migrates, makes the key; restart: median of 5".into(),
    ]);
    row([
        "6".into(),
        "Release binary".into(),
        format!("{:.1} MB", f.binary_bytes as f64 / 1e6),
        "—".into(),
        "—".into(),
        format!("as built (`--release`){stripped}"),
    ]);
    for b in backends {
        let verdict = if b.race.ok == 1 && b.race.other == 0 { "as required" } else { "**WRONG**" };
        row([
            "✓".into(),
            format!("200 simultaneous download POSTs, one share, {}", b.name),
            format!("{} × 303, {} × 410, {} other", b.race.ok, b.race.gone, b.race.other),
            "exactly 1 × 303".into(),
            "—".into(),
            verdict.into(),
        ]);
    }
    for b in backends {
        if let Some(c) = &b.crowds {
            row([
                "8".into(),
                format!("{} simultaneous downloads of a {} MiB share each", c.downloads, c.one.bytes >> 20),
                format!("{:.0} MB/s in all", c.all.mb_per_s()),
                format!("one alone: {:.0} MB/s", c.one.mb_per_s()),
                format!("{:.2}", c.all.mb_per_s() / c.one.mb_per_s()),
                format!(
                    "reqwest clients in the bench process, sharing the cores with the server; {} (before \
                     {}; base, three read-ahead chunks mapped and 64 KiB each; anonymous part {})",
                    crowds::against_bound(c.download_peak_kib, c.download_bound_kib()),
                    mib(c.rss_before_kib),
                    mib(c.download_anon_kib)
                ),
            ]);
            row([
                "8".into(),
                format!(
                    "{} simultaneous tus uploads of {} MiB each in 4 MiB PATCHes, the server killed halfway",
                    c.uploads,
                    c.upload_bytes >> 20
                ),
                format!("{:.0} MB/s in all", c.all_uploads.mb_per_s()),
                "—".into(),
                "—".into(),
                format!(
                    "SIGKILL at half the bytes; restarted and ready {} after the kill, every upload's offset read \
                     back {} after it, all finished; {} (before {}; base and 2 MiB per PATCH; anonymous part {})",
                    ms(c.restart),
                    ms(c.all_resumed),
                    crowds::against_bound(c.upload_peak_kib, c.upload_bound_kib()),
                    mib(c.rss_before_kib),
                    mib(c.upload_anon_kib)
                ),
            ]);
        }
    }
    let mode = if o.quick {
        " **Quick run (WATASU_BENCH_QUICK): sizes and durations shrunk, figures not comparable.**"
    } else {
        ""
    };
    format!(
        "# watasu performance report\n\n{} UTC on {}; the run took {:.1} min. wrk: 2 threads, 64 connections, {} s per \
         figure after a {} s warm-up, on the same machine as the server.{mode}\n\n{}\n",
        chrono::Utc::now().format("%Y-%m-%d %H:%M"),
        machine(),
        took.as_secs_f64() / 60.0,
        o.seconds,
        o.warmup,
        lines.join("\n")
    ) + &growth(backends)
        + &store::section(stores)
}

/// The growth section: each series with its sizes, so its shape (flat, log, linear) shows.
fn growth(backends: &[BackendFigures]) -> String {
    let mut out = String::from(
        "\n## Cost as the work grows\n\nwrk as above, half-length runs (each figure one run); \
         req/s with p99 in brackets.\n\n",
    );
    for b in backends {
        let g = &b.growth;
        let sizes: Vec<String> = g.sizes.iter().map(|n| format!("{} active shares", thousands(*n))).collect();
        out += &format!("| {} | {} |\n|---|{}\n", b.name, sizes.join(" | "), "---|".repeat(sizes.len()));
        let series = |name: &str, runs: &[WrkResult]| {
            let cells: Vec<String> = runs.iter().map(|w| format!("{:.0} ({:.1} ms)", w.rps, w.p99_ms)).collect();
            format!("| {name} | {} |\n", cells.join(" | "))
        };
        out += &series("Landing page", &g.landing);
        out += &series("Code step", &g.code);
        let l = &g.list;
        out += &format!(
            "\nShare list of a sender with {} shares, {}: first page {:.0} req/s ({:.1} ms p99), a page near the \
             end {:.0} req/s ({:.1} ms), a sender with 100 shares {:.0} req/s ({:.1} ms).\n\n",
            thousands(l.shares),
            b.name,
            l.first.rps,
            l.first.p99_ms,
            l.deep.rps,
            l.deep.p99_ms,
            l.few.rps,
            l.few.p99_ms
        );
    }
    out
}
