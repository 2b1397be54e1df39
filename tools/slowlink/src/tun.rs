//! A TUN device created inside a named network namespace (`ip netns add NAME`), read and written
//! from this process wherever it runs. The device lives as long as its file descriptor: when the
//! program exits, however it exits, the kernel removes both devices.

use std::{
    ffi::CString,
    fs::File,
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
};

/// `_IOW('T', 202, int)` from linux/if_tun.h.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// The part of `struct ifreq` TUNSETIFF reads: the name and the flags (40 bytes in all).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

pub struct Tun {
    fd: OwnedFd,
}

impl Tun {
    /// Creates the layer-3 device `name` (no packet information header) in namespace `netns`.
    pub fn create_in(netns: &str, name: &str) -> io::Result<Self> {
        if name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::other(format!("device name {name:?} is too long")));
        }
        let home = File::open("/proc/self/ns/net")?;
        let target = File::open(format!("/run/netns/{netns}"))
            .map_err(|e| io::Error::other(format!("namespace {netns:?} (ip netns add {netns}): {e}")))?;
        enter(&target)?;
        let created = Self::create(name);
        enter(&home)?;
        created
    }

    fn create(name: &str) -> io::Result<Self> {
        let path = CString::new("/dev/net/tun").unwrap();
        let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut request = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI, _rest: [0; 22] };
        request.name[..name.len()].copy_from_slice(name.as_bytes());
        if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut request) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self { fd })
    }

    /// One packet into `buffer`, or `None` when none is waiting.
    pub fn read(&self, buffer: &mut [u8]) -> io::Result<Option<usize>> {
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            e => Err(e),
        }
    }

    /// Hands one packet to the device's namespace, as if it had arrived on the wire.
    pub fn write(&self, packet: &[u8]) -> io::Result<()> {
        let n = unsafe { libc::write(self.fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        if n < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Moves this thread into the network namespace `ns` refers to.
fn enter(ns: &File) -> io::Result<()> {
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
