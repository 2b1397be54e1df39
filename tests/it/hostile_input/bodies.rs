//! Broken form and multipart bodies, and header injection in addresses.

use super::*;
use crate::support::Backend;

async fn broken_form_bodies_are_refused_before_any_change(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sender Sato", PASSWORD).await;
    let big = "a".repeat(100 * 1024);
    for route in ["email", "code", "login"] {
        let share = app.create_share().await;
        let (browser, csrf) = if route == "login" {
            let browser = app.browser();
            let csrf = browser.get("/login").await.csrf_token();
            (browser, csrf)
        } else {
            app.landed_browser(&share.token).await
        };
        let path = if route == "login" { "/login".to_owned() } else { format!("/s/{}/{route}", share.token) };
        let before = snapshot(&app).await;
        let prefix = format!("csrf_token={csrf}&");
        let cases: Vec<(&str, Vec<u8>, &[u16])> = vec![
            ("100 KiB email", format!("{prefix}email={big}&password=x").into_bytes(), &[413]),
            ("100 KiB code", format!("{prefix}code={big}").into_bytes(), &[413]),
            ("100 KiB password", format!("{prefix}email=s%40example.test&password={big}").into_bytes(), &[413]),
            ("100 KiB unknown field", format!("{prefix}x={big}").into_bytes(), &[413]),
            ("invalid UTF-8 CSRF token", [b"csrf_token=\xff\xfe%ff".as_slice(), b"&email=a"].concat(), &[403]),
            // With a right CSRF token: the fields themselves are not text.
            (
                "percent-encoded bytes that are not UTF-8",
                format!("{prefix}email=%FF%FEs%40example.test&code=%FF1&password=%C3%28").into_bytes(),
                &[400],
            ),
            (
                "raw bytes that are not UTF-8",
                [prefix.as_bytes(), b"email=s\xff%40example.test&code=1\xfe&password=\xff"].concat(),
                &[400],
            ),
        ];
        for (name, body, allowed) in cases {
            let page = post_raw(&browser, &path, FORM, body).await;
            assert_refused(&page, allowed, &format!("{route}: {name}"));
        }
        assert_eq!(snapshot(&app).await, before, "{route}");
    }
    let mails = mails_after_a_sure_one(&app).await;
    assert_eq!(
        mails.len(),
        1,
        "mail was sent besides the sure one: {:?}",
        mails.iter().map(|m| m.to.clone()).collect::<Vec<_>>()
    );
}

async fn header_injection_in_addresses_answers_like_a_wrong_address_and_sends_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sender Sato", PASSWORD).await;
    let injections = ["a@b.c\r\nBcc: x@y.z", "a@b.c%0d%0aBcc:x@y.z", "recipient@example.test\r\nBcc: x@y.z"];
    // A share per address: the per-share limit allows only a few addresses in a row.
    let mut visits = Vec::new();
    for _ in 0..=injections.len() {
        let share = app.create_share().await;
        let (browser, csrf) = app.landed_browser(&share.token).await;
        visits.push((share.token, browser, csrf));
    }
    let before = snapshot(&app).await;

    let (token, browser, csrf) = &visits[0];
    let wrong = browser
        .post_form(&format!("/s/{token}/email"), &[("csrf_token", csrf), ("email", "nobody@example.test")])
        .await;
    assert_eq!(wrong.status, 303, "{}", wrong.body);
    let wrong = browser.follow(token, wrong).await;
    let wrong_step = wrong.attr("#step", "data-step");
    for (injection, (token, browser, csrf)) in injections.into_iter().zip(&visits[1..]) {
        let answer =
            browser.post_form(&format!("/s/{token}/email"), &[("csrf_token", csrf), ("email", injection)]).await;
        assert_eq!(answer.status, 303, "{injection:?}: {}", answer.body);
        let page = browser.follow(token, answer).await;
        assert_eq!(page.status, wrong.status, "{injection:?}: {}", page.body);
        // Shown back as typed text, with its line breaks gone.
        assert_eq!(page.texts(".typed-address"), [injection.replace("\r\n", "")], "{injection:?}");
        assert_eq!(page.attr("#step", "data-step"), wrong_step, "{injection:?}");
        assert_eq!(page.texts("h1"), wrong.texts("h1"), "{injection:?}");
        assert_eq!(page.texts("[role=alert]"), wrong.texts("[role=alert]"), "{injection:?}");
        for marker in LEAK_MARKERS {
            assert!(!page.body.contains(marker), "{injection:?}: leaks {marker:?}");
        }
    }

    let login = app.browser();
    let csrf = login.get("/login").await.csrf_token();
    let wrong = login
        .post_form("/login", &[("csrf_token", &csrf), ("email", "nobody@example.test"), ("password", PASSWORD)])
        .await;
    for injection in ["a@b.c\r\nBcc: x@y.z", "a@b.c%0d%0aBcc:x@y.z", "s@example.test\r\nBcc: x@y.z"] {
        let page =
            login.post_form("/login", &[("csrf_token", &csrf), ("email", injection), ("password", PASSWORD)]).await;
        assert_eq!(page.status, wrong.status, "{injection:?}: {}", page.body);
        assert_eq!(page.texts("h1"), wrong.texts("h1"), "{injection:?}");
        assert_eq!(page.texts("[role=alert]"), wrong.texts("[role=alert]"), "{injection:?}");
        assert!(login.get("/shares").await.status == 303, "{injection:?} signed in");
    }

    assert_eq!(snapshot(&app).await, before);
    let mails = mails_after_a_sure_one(&app).await;
    assert_eq!(
        mails.len(),
        1,
        "mail was sent besides the sure one: {:?}",
        mails.iter().map(|m| m.to.clone()).collect::<Vec<_>>()
    );
}

async fn malformed_multipart_uploads_are_4xx_and_store_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let browser = app.signed_in_sender("s@example.test").await;
    let csrf = browser.get("/shares/new").await.csrf_token();
    let b = "hostileBoundary7MA4YWxkTrZu0gW";
    let multipart = format!("multipart/form-data; boundary={b}");
    let csrf_part = part(b, "csrf_token", None, csrf.as_bytes());
    let fields =
        [csrf_part.clone(), part(b, "recipient", None, b"c@example.test"), part(b, "expires_in", None, b"1d")].concat();
    let file_a = part(b, "file", Some("a.txt"), b"first file");
    let complete = [fields.clone(), file_a.clone(), closing(b)].concat();
    let cases: Vec<(&str, &str, Vec<u8>, &[u16])> = vec![
        ("no boundary", "multipart/form-data", complete.clone(), &[400]),
        ("empty boundary", "multipart/form-data; boundary=", complete.clone(), &[400]),
        ("boundary not in the body", &multipart, b"just some bytes, no parts at all".to_vec(), &[400]),
        (
            "truncated inside a field",
            &multipart,
            [
                csrf_part.clone(),
                format!("--{b}\r\nContent-Disposition: form-data; name=\"recipient\"\r\n\r\nc@exa").into_bytes(),
            ]
            .concat(),
            &[400],
        ),
        (
            "truncated inside the part headers",
            &multipart,
            [csrf_part.clone(), format!("--{b}\r\nContent-Disp").into_bytes()].concat(),
            &[400],
        ),
        ("file before the CSRF token", &multipart, [file_a.clone(), csrf_part.clone(), closing(b)].concat(), &[403]),
        (
            "recipient before the CSRF token",
            &multipart,
            [part(b, "recipient", None, b"c@example.test"), file_a.clone(), closing(b)].concat(),
            &[403],
        ),
        (
            "20 KiB field",
            &multipart,
            [csrf_part.clone(), part(b, "recipient", None, &[b'a'; 20 * 1024]), file_a.clone(), closing(b)].concat(),
            &[413],
        ),
        (
            "20 KiB CSRF field",
            &multipart,
            [part(b, "csrf_token", None, &[b'0'; 20 * 1024]), file_a.clone(), closing(b)].concat(),
            &[413],
        ),
        (
            "invalid UTF-8 field",
            &multipart,
            [csrf_part.clone(), part(b, "recipient", None, b"\xff\xfe@\xc0\xaf"), file_a.clone(), closing(b)].concat(),
            &[400],
        ),
        (
            "truncated inside the file",
            &multipart,
            [
                fields.clone(),
                format!(
                    "--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nthe file is cu"
                )
                .into_bytes(),
            ]
            .concat(),
            &[400],
        ),
        (
            // Several files are a handover; a field after them refuses the form, keeping none.
            "a field after the files",
            &multipart,
            [
                fields.clone(),
                file_a.clone(),
                part(b, "file", Some("b.txt"), b"second file"),
                part(b, "message", None, b"late"),
                closing(b),
            ]
            .concat(),
            &[400],
        ),
    ];
    let before = snapshot(&app).await;
    for (name, content_type, body, allowed) in cases {
        let page = post_raw(&browser, "/shares/new", content_type, body).await;
        assert_refused(&page, allowed, name);
        assert_eq!(snapshot(&app).await, before, "{name} changed something");
    }
    let mails = mails_after_a_sure_one(&app).await;
    assert_eq!(mails.len(), 1, "mail was sent besides the sure one");
}

both_backends!(
    broken_form_bodies_are_refused_before_any_change,
    header_injection_in_addresses_answers_like_a_wrong_address_and_sends_nothing,
    malformed_multipart_uploads_are_4xx_and_store_nothing
);
