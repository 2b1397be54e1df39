//! A real nginx in front of the app, configured as the README says (contrib/nginx/watasu-limits.conf
//! in `http`, contrib/nginx/watasu-proxy.conf in the location) with a Cloudflare-like cap on
//! request bodies. One process (`master_process off`), so it runs as
//! whoever runs the tests and needs no folder that another user can read.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use super::process::{free_local_addr, wait_until_listening};

pub struct Nginx {
    child: Child,
    pub addr: String,
    dir: tempfile::TempDir,
}

fn binary() -> PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx"].iter().map(PathBuf::from).find(|p| p.exists()).unwrap_or_else(|| {
        panic!("nginx is not installed: `apt-get install nginx` (scripts/test installs it when run as root)")
    })
}

impl Nginx {
    /// nginx on a free local port, proxying everything to `upstream` (`host:port`) and refusing
    /// request bodies over `max_body` (nginx syntax, e.g. `100m`).
    pub fn start(upstream: &str, max_body: &str) -> Self {
        Self::start_balancing(&[upstream], max_body)
    }

    /// The same in front of several instances, each request to the next one in turn (nginx's
    /// round robin, exact with the one worker process).
    pub fn start_balancing(upstreams: &[&str], max_body: &str) -> Self {
        Self::start_at(upstreams, max_body, "/")
    }

    /// nginx passing only `location` (like `/files/`) on to `upstream`, the path unchanged, as
    /// the README's subpath example does; anything else is nginx's own 404.
    pub fn start_below(location: &str, upstream: &str) -> Self {
        Self::start_at(&[upstream], "100m", location)
    }

    fn start_at(upstreams: &[&str], max_body: &str, location: &str) -> Self {
        let servers: String = upstreams.iter().map(|u| format!("server {u}; ")).collect();
        let dir = tempfile::tempdir().unwrap();
        let addr = free_local_addr();
        let contrib = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/nginx");
        let (limits_conf, proxy_conf) = (contrib.join("watasu-limits.conf"), contrib.join("watasu-proxy.conf"));
        let d = dir.path().display();
        let config = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log info;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  log_format requests '$request_method $uri $status $request_length $upstream_addr';\n  access_log {d}/access.log requests;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             include {};\n\
             upstream watasu {{ {servers}}}\n\
             server {{\n    listen {addr};\n    client_max_body_size {max_body};\n\
             location {location} {{\n      proxy_pass http://watasu;\n      include {};\n    }}\n  }}\n}}\n",
            limits_conf.display(),
            proxy_conf.display()
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, config).unwrap();
        let child = Command::new(binary())
            .args(["-p", dir.path().to_str().unwrap(), "-c", conf_path.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting nginx");
        let nginx = Self { child, addr, dir };
        wait_until_listening(&nginx.addr, Duration::from_secs(10), || format!("nginx ({})", nginx.error_log()));
        nginx
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests nginx passed on, one line each: method, path, status, request bytes (headers
    /// and body), and the instance that answered.
    pub fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default()
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
