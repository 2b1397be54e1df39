//! Malformed share tokens and raw invalid bytes in request lines.

use super::*;
use crate::support::Backend;

async fn malformed_share_tokens_from_the_naughty_list_are_404_and_change_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let (browser, csrf) = app.landed_browser(&share.token).await;
    let before = snapshot(&app).await;
    let mut tried = 0;
    for naughty in naughty_strings() {
        // A dot segment is resolved away by the client's URL parser; the raw-bytes test sends those.
        if is_lower_hex_64(&naughty) || naughty == b"." || naughty == b".." {
            continue;
        }
        tried += 1;
        let encoded = percent_encode(&naughty);
        let case = format!("{:?}", String::from_utf8_lossy(&naughty));
        let fields = [("csrf_token", csrf.as_str())];
        // An empty token matches no route at all; bytes that are not UTF-8 cannot be a path parameter.
        let (get_landing, post_landing, get_download, post_download): (&[u16], &[u16], &[u16], &[u16]) =
            if naughty.is_empty() {
                (&[404], &[404], &[405], &[404])
            } else if std::str::from_utf8(&naughty).is_err() {
                (&[400, 404], &[405], &[405], &[400, 404])
            } else {
                (&[404], &[405], &[405], &[404])
            };
        let landing = format!("/s/{encoded}");
        let download = format!("/s/{encoded}/download");
        assert_refused(&browser.get(&landing).await, get_landing, &format!("GET /s/ {case}"));
        assert_refused(&browser.post_form(&landing, &fields).await, post_landing, &format!("POST /s/ {case}"));
        assert_refused(&browser.get(&download).await, get_download, &format!("GET download {case}"));
        assert_refused(&browser.post_form(&download, &fields).await, post_download, &format!("POST download {case}"));
    }
    assert!(tried > 600, "only {tried} naughty strings tried");
    assert_eq!(snapshot(&app).await, before);
}

async fn raw_invalid_bytes_in_paths_and_queries_get_a_4xx_answer(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let before = snapshot(&app).await;
    let zeros = "0".repeat(64);
    let targets: Vec<Vec<u8>> = vec![
        b"/s/\xff\xfe".to_vec(),
        b"/s/\xc0\xaf".to_vec(),
        b"/s/\xc0\xae\xc0\xae/download".to_vec(),
        b"/s/%c0%af".to_vec(),
        b"/s/%ff%fe/download".to_vec(),
        b"/s/%00".to_vec(),
        b"/s/abc%00def/download".to_vec(),
        b"/s/\xed\xa0\x80".to_vec(),
        b"/s/%ed%a0%80".to_vec(),
        b"/s/%2e%2e".to_vec(),
        b"/s/%2e%2e/download".to_vec(),
        b"/s/../download".to_vec(),
        [b"/s/".as_slice(), zeros.as_bytes(), b"?step=\xff\xfe"].concat(),
        [b"/s/".as_slice(), zeros.as_bytes(), b"?step=%ff%00%c0%af"].concat(),
        b"/s/zzz?step=%00&step=\xc0\xaf".to_vec(),
        b"/static/\xff/\xc0\xae".to_vec(),
        b"/static/%ff/%c0%ae%c0%ae%2f%2e%2e%2fetc%2fpasswd".to_vec(),
        b"/shares/%ff".to_vec(),
        b"/invite/%ff%00".to_vec(),
        b"/setup/\xff".to_vec(),
        b"/s/abc\x00def".to_vec(),
        b"/s/x?step=\x00".to_vec(),
    ];
    for target in &targets {
        let mut request = b"GET ".to_vec();
        request.extend_from_slice(target);
        request.extend_from_slice(b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        let answer = raw_exchange(&app, &request).await;
        let case = format!("{:?}", String::from_utf8_lossy(target));
        assert!(!answer.is_empty(), "{case}: the connection was dropped without an answer");
        let (status, content_type, body) = parse_answer(&answer);
        let raw_bytes = target.iter().any(|&b| !(0x20..0x80).contains(&b));
        if raw_bytes {
            // Not a valid request line: the HTTP parser answers a bare 400 before the app runs.
            assert_eq!(status, 400, "{case}: {}", String::from_utf8_lossy(&answer));
            continue;
        }
        assert!(matches!(status, 400 | 404 | 405), "{case}: status {status}: {}", String::from_utf8_lossy(&answer));
        assert_friendly(&body, content_type.as_deref(), &case);
    }
    assert_eq!(snapshot(&app).await, before);
}

async fn the_token_parser_accepts_only_the_issued_token(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let share = app.create_share().await;
    let before = snapshot(&app).await;
    let real = share.token.as_str();
    assert!(watasu::session::is_token_shaped(real));
    assert!(app.state.shares.open(real).await.is_ok());

    let mut rng = StdRng::seed_from_u64(0x5eed_7a7a);
    let hex = b"0123456789abcdefABCDEF";
    let mut candidates: Vec<String> = Vec::new();
    for i in 0..3000 {
        let len = rng.random_range(0..=200usize);
        let s: String = match i % 4 {
            0 => (0..len).map(|_| rng.random_range(0x20u8..0x7f) as char).collect(),
            1 => (0..len).map(|_| rng.random::<char>()).collect(),
            // Near-tokens: mostly 64 characters of (mostly lower-case) hex.
            2 => {
                let len = if rng.random_bool(0.7) { 64 } else { rng.random_range(60..=68) };
                let alphabet = if rng.random_bool(0.8) { &hex[..16] } else { &hex[..] };
                (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())] as char).collect()
            }
            // Mutations of the real token.
            _ => {
                let mut chars: Vec<char> = real.chars().collect();
                let at = rng.random_range(0..chars.len());
                match rng.random_range(0..5) {
                    0 => chars[at] = if chars[at] == '0' { '1' } else { '0' },
                    1 => chars[at] = chars[at].to_ascii_uppercase(),
                    2 => chars.insert(at, rng.random::<char>()),
                    3 => {
                        chars.remove(at);
                    }
                    _ => chars.push([' ', '\n', '\0', '%', '/', '\u{200b}'][rng.random_range(0..6)]),
                }
                chars.into_iter().collect()
            }
        };
        candidates.push(s);
    }
    candidates.extend([
        real.to_uppercase(),
        format!(" {real}"),
        format!("{real} "),
        real[..63].to_owned(),
        String::new(),
    ]);
    let mut shaped = 0;
    for s in &candidates {
        let expected_shape = is_lower_hex_64(s.as_bytes());
        assert_eq!(watasu::session::is_token_shaped(s), expected_shape, "{s:?}");
        shaped += usize::from(expected_shape);
        let opened = app.state.shares.open(s).await;
        assert_eq!(opened.is_ok(), s == real, "{s:?} opened a share");
    }
    assert!(shaped > 500, "too few token-shaped candidates ({shaped}) reached the database lookup");
    assert_eq!(snapshot(&app).await, before);
}

both_backends!(
    malformed_share_tokens_from_the_naughty_list_are_404_and_change_nothing,
    raw_invalid_bytes_in_paths_and_queries_get_a_4xx_answer,
    the_token_parser_accepts_only_the_issued_token
);
