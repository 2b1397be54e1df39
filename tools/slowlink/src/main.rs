//! slowlink: an emulated network link for the benchmarks, where the kernel has no `netem`. It
//! creates one TUN device in each of two network namespaces and moves every packet from one to
//! the other after random loss, a rate-limited bottleneck with a bounded queue, and the one-way
//! delay, so TCP between the namespaces sees a real round trip. scripts/netlink sets it up.
//!
//! ```text
//! slowlink --client-ns wts-client --server-ns wts-server [--dev wts0]
//!          [--rtt-ms 50] [--loss 0.005] [--rate-mbit 200] [--queue-bytes N] [--seed N]
//! ```
//!
//! Runs until SIGINT or SIGTERM, then prints each direction's counters and exits.

mod link;
mod tun;

use std::{
    process::ExitCode,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use link::{Counters, Direction, Shape};
use tun::Tun;

/// Bigger than any packet a TUN device hands over at its default MTU, with room to raise it.
const BUFFER: usize = 65_536;
/// Packets read from one device before the other is looked at, so neither starves.
const READS_PER_TURN: usize = 64;

struct Options {
    client_ns: String,
    server_ns: String,
    dev: String,
    shape: Shape,
    seed: u64,
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(message) => {
            eprintln!("slowlink: {message}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("slowlink: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let (mut client_ns, mut server_ns, mut dev) = (None, None, "wts0".to_owned());
    let (mut rtt_ms, mut loss, mut rate_mbit, mut queue_bytes, mut seed) = (50.0, 0.005, 200.0, None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<f64>().map_err(|_| format!("{flag}: not a number: {value}"));
        match flag.as_str() {
            "--client-ns" => client_ns = Some(value.clone()),
            "--server-ns" => server_ns = Some(value.clone()),
            "--dev" => dev = value.clone(),
            "--rtt-ms" => rtt_ms = number()?,
            "--loss" => loss = number()?,
            "--rate-mbit" => rate_mbit = number()?,
            "--queue-bytes" => queue_bytes = Some(number()? as u64),
            "--seed" => seed = Some(number()? as u64),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if !(0.0..=1.0).contains(&loss) || rtt_ms < 0.0 || rate_mbit < 0.0 {
        return Err("--loss is a fraction from 0 to 1; --rtt-ms and --rate-mbit are not negative".into());
    }
    let rate_bits = (rate_mbit * 1e6) as u64;
    // One bandwidth-delay product, plus a little so a full window's burst is not cut at once.
    let bdp = (rate_bits as f64 / 8.0 * rtt_ms / 1000.0) as u64;
    let shape = Shape {
        one_way: Duration::from_secs_f64(rtt_ms / 2000.0),
        loss,
        rate_bits,
        queue_bytes: queue_bytes.unwrap_or(bdp + 64 * 1024),
    };
    let seed = seed.unwrap_or_else(|| {
        let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        since_epoch.as_nanos() as u64 ^ std::process::id() as u64
    });
    Ok(Options {
        client_ns: client_ns.ok_or("--client-ns is required")?,
        server_ns: server_ns.ok_or("--server-ns is required")?,
        dev,
        shape,
        seed,
    })
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn run(o: &Options) -> std::io::Result<()> {
    let client = Tun::create_in(&o.client_ns, &o.dev)?;
    let server = Tun::create_in(&o.server_ns, &o.dev)?;
    let waiting = stop_signals_only_while_waiting();
    let s = o.shape;
    eprintln!(
        "slowlink: {} in {} <-> {} in {}: one way {:?}, loss {}, {} bit/s, queue {} bytes",
        o.dev, o.client_ns, o.dev, o.server_ns, s.one_way, s.loss, s.rate_bits, s.queue_bytes
    );
    // Index 0 carries client to server, 1 server to client.
    let tuns = [&client, &server];
    let mut directions = [Direction::new(s, o.seed), Direction::new(s, o.seed.rotate_left(32) ^ 1)];
    let mut buffer = vec![0u8; BUFFER];
    while !STOP.load(Ordering::Relaxed) {
        let now = Instant::now();
        for (direction, to) in directions.iter_mut().zip([&server, &client]) {
            while let Some(packet) = direction.take_due(now) {
                if to.write(&packet).is_err() {
                    direction.counters.write_errors += 1;
                }
            }
        }
        let next = directions.iter().filter_map(Direction::next_due).min();
        let mut fds = tuns.map(|t| libc::pollfd { fd: t.raw(), events: libc::POLLIN, revents: 0 });
        let timeout = next.map(|due| timespec(due.saturating_duration_since(now)));
        let timeout_ptr = timeout.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
        if unsafe { libc::ppoll(fds.as_mut_ptr(), 2, timeout_ptr, &waiting) } < 0 {
            match std::io::Error::last_os_error() {
                e if e.kind() == std::io::ErrorKind::Interrupted => continue,
                e => return Err(e),
            }
        }
        for ((fd, from), direction) in fds.iter().zip(tuns).zip(directions.iter_mut()) {
            if fd.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 {
                return Err(std::io::Error::other("a device went away"));
            }
            if fd.revents & libc::POLLIN == 0 {
                continue;
            }
            for _ in 0..READS_PER_TURN {
                let Some(n) = from.read(&mut buffer)? else { break };
                direction.offer(Instant::now(), buffer[..n].to_vec());
            }
        }
    }
    print_counters("client->server", &directions[0].counters);
    print_counters("server->client", &directions[1].counters);
    Ok(())
}

/// Blocks SIGINT and SIGTERM except inside `ppoll`, whose mask this returns: a signal that comes
/// between the check of STOP and the wait is delivered when the wait begins, never lost.
fn stop_signals_only_while_waiting() -> libc::sigset_t {
    unsafe {
        let mut stop: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut stop);
        libc::sigaddset(&mut stop, libc::SIGINT);
        libc::sigaddset(&mut stop, libc::SIGTERM);
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &stop, &mut before);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut());
        libc::sigdelset(&mut before, libc::SIGINT);
        libc::sigdelset(&mut before, libc::SIGTERM);
        before
    }
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long }
}

fn print_counters(direction: &str, c: &Counters) {
    println!(
        "{direction}: {} packets, {} bytes, {} lost, {} dropped at the full queue, {} not written",
        c.packets, c.bytes, c.lost, c.queue_full, c.write_errors
    );
}
