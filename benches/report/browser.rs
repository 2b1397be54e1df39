//! The page's own uploader in a real headless Chromium: chromedriver in this namespace drives,
//! over pipes, a Chromium started in the link's client namespace (a DevTools port there would be
//! out of chromedriver's reach). The new-share page's tus-js-client sends the file; the upload is
//! timed from the click to the share's page.

use std::{
    net::TcpListener,
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// One Chromium, stopped with its chromedriver when dropped.
pub struct Chromium {
    driver: Child,
    client: Client,
}

impl Chromium {
    /// Chromium in network namespace `netns`, its profile and log in `dir`.
    pub async fn start_in(netns: &str, dir: &Path) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let wrapper = dir.join("chromium-in-netns");
        std::fs::write(&wrapper, format!("#!/bin/sh\nexec ip netns exec {netns} chromium \"$@\"\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", dir.join("chromedriver.log").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("running chromedriver (apt-get install chromium chromium-driver)");
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": wrapper,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--remote-debugging-pipe",
                    format!("--user-data-dir={}", dir.join("profile").display()),
                ],
            },
        });
        let serde_json::Value::Object(capabilities) = capabilities else { unreachable!() };
        let started = Instant::now();
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await
            {
                Ok(client) => break client,
                Err(e) if started.elapsed() > Duration::from_secs(30) => panic!("chromedriver gave no browser: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        Self { driver, client }
    }

    /// Signs in with the session `cookie` (`name=value`), fills the new-share form at `base` with
    /// `source`, sends it and waits for the share's page, at most `cap`; answers the seconds it
    /// took, or `None` when it was cut at `cap`.
    pub async fn upload(&self, base: &str, cookie: &str, source: &Path, cap: Duration) -> Option<f64> {
        let c = &self.client;
        // Set by a script on the site's one page without a session of its own: chromedriver
        // refuses WebDriver's cookie without a domain, and fantoccini sends none as `null`.
        c.goto(&format!("{base}/healthz")).await.unwrap();
        c.execute("document.cookie = arguments[0];", vec![json!(format!("{cookie}; path=/"))]).await.unwrap();
        c.goto(&format!("{base}/shares/new")).await.unwrap();
        c.find(Locator::Css("#recipient")).await.unwrap().send_keys("recipient@example.test").await.unwrap();
        c.find(Locator::Css("input[type=file]")).await.unwrap().send_keys(source.to_str().unwrap()).await.unwrap();
        let started = Instant::now();
        c.find(Locator::Css("main form[data-upload] button[type=submit]")).await.unwrap().click().await.unwrap();
        while started.elapsed() < cap {
            if c.find(Locator::Css("#share-link")).await.is_ok() {
                return Some(started.elapsed().as_secs_f64());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    pub async fn stop(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
