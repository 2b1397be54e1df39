//! Every mail's HTML part in a real Chromium, in Japanese and English, 390 px (a phone) and
//! 600 px (a mail pane) wide, in the light and the dark scheme: nothing reaches past the right
//! edge (the 90-character link wraps), the button and the raw link stay readable, and a
//! screenshot of each is written for people to look at.

use serde_json::{Value, json};
use watasu::{
    i18n::Lang,
    mail::{
        lock_notice::{LockNotice, lock_notice_mail},
        messages::{self, Notification, Receipt},
        origin::MailOrigin,
    },
};

use crate::support::browser::{BrowserOptions, BrowserSession, Viewport};

/// A link as long as the real ones: the base URL, `/s/` and a 64-character token.
const SHARE_LINK: &str =
    "https://files.example.test/s/7f3a9c0e5b2d4f6a8c1e3b5d7f9a0c2e4b6d8f0a1c3e5b7d9f1a2c4e6b8d0f2a";
const INVITE_LINK: &str =
    "https://files.example.test/invite/0c2e4b6d8f0a1c3e5b7d9f1a2c4e6b8d0f2a7f3a9c0e5b2d4f6a8c1e3b5d7f9a";

/// WCAG AA for body text.
const READABLE: f64 = 4.5;

/// Each mail kind with an HTML part, in `lang`: (name, HTML, whether it carries a link).
fn mails(lang: Lang) -> Vec<(&'static str, String, bool)> {
    let origin =
        MailOrigin::new("watasu <w@example.test>".parse().unwrap(), &"https://files.example.test/".parse().unwrap());
    let (name, message, file) = match lang {
        Lang::Ja => (
            "経理部 佐藤 花子",
            "11月分の請求書です。\nご確認をお願いいたします。",
            "2026年11月分_請求書_株式会社サンプル商事御中.pdf",
        ),
        Lang::En => (
            "Hanako Sato, Accounts",
            "Here is November's invoice.\nPlease have a look.",
            "2026-11_invoice_for_Example_Trading_Company_Ltd.pdf",
        ),
    };
    let notification = Notification {
        sender_name: name,
        sender_email: "hanako.sato@accounts.example.test",
        message,
        link: SHARE_LINK,
        expires: "2026-12-02 15:00",
        files: &[("見積書.pdf", "1.2 MB")],
        file_count: 1,
    };
    let files = [file.to_owned()];
    let receipt = Receipt {
        recipient: "recipient@example.test",
        files: &files,
        started: "2026-12-01 15:00",
        completed: "2026-12-01 15:01",
        link: SHARE_LINK,
    };
    let lock_notice = LockNotice { recipient: "recipient@example.test", files: &files, browsers: 2, link: SHARE_LINK };
    let to = "recipient@example.test";
    [
        ("notification", messages::notification_mail(&origin, to, lang, &notification), true),
        ("code", messages::code_mail(&origin, to, lang, "012345"), false),
        ("receipt", messages::receipt_mail(&origin, to, lang, &receipt), true),
        ("invitation", messages::invitation_mail(&origin, to, lang, INVITE_LINK), true),
        ("lock-notice", lock_notice_mail(&origin, to, lang, &lock_notice), true),
    ]
    .into_iter()
    .map(|(kind, message, linked)| {
        let raw = message.unwrap().formatted();
        let parsed = mail_parser::MessageParser::default().parse(&raw).unwrap();
        (kind, parsed.body_html(0).expect("an HTML part").into_owned(), linked)
    })
    .collect()
}

/// The contrast of each element's text with what is behind it, and of the button's text with
/// the bare page (as in a client that drops the button's background).
const CONTRASTS: &str = "
    const probe = document.createElement('div');
    probe.style.backgroundColor = 'Canvas';
    document.body.appendChild(probe);
    const canvas = getComputedStyle(probe).backgroundColor;
    probe.remove();
    const channels = c => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
    const luminance = c => {
        const [r, g, b] = channels(c).map(x => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const ratio = (a, b) => { const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x); return (hi + 0.05) / (lo + 0.05); };
    const behind = e => {
        for (; e; e = e.parentElement) {
            const bg = getComputedStyle(e).backgroundColor;
            if (bg !== 'transparent' && !/, 0\\)$/.test(bg)) return bg;
        }
        return canvas;
    };
    const of = css => { const e = document.querySelector(css); return e && ratio(getComputedStyle(e).color, behind(e)); };
    const button = document.querySelector('.mail-button');
    return {
        text: of('p'),
        button: of('.mail-button'),
        raw_link: of('.mail-raw-link'),
        button_without_its_background: button && ratio(getComputedStyle(button).color, canvas),
    };";

fn ratio(contrasts: &Value, key: &str) -> f64 {
    contrasts[key].as_f64().unwrap_or_else(|| panic!("no {key}: {contrasts}"))
}

async fn render_every_mail(viewport: Viewport, width: u32) {
    let browser = BrowserSession::start(BrowserOptions::default().viewport(viewport)).await;
    let dir = tempfile::tempdir().unwrap();
    for lang in Lang::ALL {
        for (kind, html, linked) in mails(lang) {
            let file = dir.path().join(format!("{kind}-{}.html", lang.code()));
            std::fs::write(&file, &html).unwrap();
            browser.goto(&format!("file://{}", file.display())).await;
            for scheme in ["light", "dark"] {
                let what = format!("the {kind} mail in {} at {width} px, {scheme}", lang.code());
                let media = json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] });
                browser.cdp("Emulation.setEmulatedMedia", media).await;
                browser.assert_no_horizontal_overflow(&what).await;
                let contrasts = browser.execute(CONTRASTS).await;
                assert!(ratio(&contrasts, "text") >= READABLE, "{what}: {contrasts}");
                if linked {
                    assert!(ratio(&contrasts, "button") >= READABLE, "{what}: the button is hard to read: {contrasts}");
                    assert!(
                        ratio(&contrasts, "raw_link") >= READABLE,
                        "{what}: the raw link is hard to read: {contrasts}"
                    );
                    if scheme == "light" {
                        let bare = ratio(&contrasts, "button_without_its_background");
                        assert!(bare >= READABLE, "{what}: the label vanishes without its background: {contrasts}");
                    }
                } else {
                    assert_eq!(contrasts["button"], Value::Null, "{what}: a button without a link");
                }
                browser.screenshot_full_page(&format!("mail-{kind}-{}-{width}-{scheme}", lang.code())).await;
            }
        }
    }
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_mail_fits_a_phone_and_reads_in_both_schemes() {
    render_every_mail(Viewport::Phone, 390).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_mail_fits_a_600_px_mail_pane_and_reads_in_both_schemes() {
    render_every_mail(Viewport::Custom { width: 600, height: 900 }, 600).await;
}
