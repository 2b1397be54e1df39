//! Names and messages cannot disguise themselves: bidirectional controls and zero-width
//! characters in a file name, a sender's display name or a message never reach the recipient's
//! pages, the download's Content-Disposition or the mails.

use std::time::{Duration, Instant};

use crate::{
    both_backends,
    support::{Backend, RECIPIENT, TestApp, TestShare, process::run_watasu},
};

const INVISIBLE: [char; 12] = [
    '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
    '\u{200e}', '\u{200b}', '\u{061c}',
];

fn assert_clean(what: &str, text: &str) {
    let found: Vec<String> =
        text.chars().filter(|c| INVISIBLE.contains(c)).map(|c| format!("U+{:04X}", c as u32)).collect();
    assert!(found.is_empty(), "{what} holds {found:?}: {text}");
    // Percent-encoded, as in Content-Disposition's filename*.
    for encoded in ["%E2%80%AE", "%E2%80%AA", "%E2%81%A6", "%E2%81%A9", "%E2%80%8B"] {
        assert!(!text.to_ascii_uppercase().contains(encoded), "{what} holds {encoded}: {text}");
    }
}

async fn invisible_characters_in_a_file_name_sender_name_and_message_reach_no_page_header_or_mail(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // Stored as typed (an account from before names were cleaned): cleaned where shown.
    let sender = app.create_sender("sender@example.test", "Sato\u{202e}\u{2066}Hanako\u{200b}").await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("invoice\u{202e}gpj.exe");
    std::fs::write(&file, b"MZ not really\n").unwrap();
    let (file, url) = (file.to_str().unwrap().to_owned(), app.state.config.database_url.clone());
    let (data, smtp) = (app.data_dir.path().to_str().unwrap().to_owned(), app.smtp.url());
    let message = "Please\u{202d} open\u{2067} this\u{200b}\u{061c}";
    let args = [
        "share",
        "create",
        "--from",
        "sender@example.test",
        "--to",
        RECIPIENT,
        "--file",
        &file,
        "--message",
        message,
        "--data-dir",
        &data,
        "--database-url",
        &url,
        "--smtp-url",
        &smtp,
        "--secret-key",
        &crate::support::test_secret_key(),
    ];
    let (code, stdout, stderr) = tokio::task::block_in_place(|| run_watasu(&args, &[]));
    assert_eq!(code, 0, "{stderr}");
    let link = stdout.trim_end().lines().last().unwrap().to_owned();
    let token = link.rsplit('/').next().unwrap().to_owned();

    let notification = app.smtp.wait_for(1, Duration::from_secs(10)).await.remove(0);
    assert!(notification.text().contains("Sato") && notification.text().contains("Please"));
    assert_clean("the notification's subject", &notification.subject());
    assert_clean("the notification", &notification.text());

    let id = watasu::share::ShareRepository::new(app.db().clone())
        .id_by_token_hash(&watasu::secret::sha256_hex(&token))
        .await
        .unwrap()
        .unwrap();
    let share = TestShare { id, token, sender_id: sender };
    let browser = app.browser();
    let landing = browser.get(&format!("/s/{}", share.token)).await;
    assert_clean("the landing page", &landing.body);
    let before = app.smtp.messages().len();
    let asked = browser
        .post_form(&format!("/s/{}/email", share.token), &[("csrf_token", &landing.csrf_token()), ("email", RECIPIENT)])
        .await;
    let step = browser.follow(&share.token, asked).await;
    let code = app.smtp.code_for_after(RECIPIENT, before).await;
    let answer = browser
        .post_form(&format!("/s/{}/code", share.token), &[("csrf_token", &step.csrf_token()), ("code", &code)])
        .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let page = browser.get(&format!("/s/{}", share.token)).await;
    assert!(page.body.contains("invoicegpj.exe"), "{}", page.body);
    assert_clean("the download page", &page.body);

    let download = browser.download(&share.token, &page.csrf_token()).await;
    assert_eq!(download.status(), 200);
    let disposition = String::from_utf8_lossy(download.headers()["content-disposition"].as_bytes()).into_owned();
    assert!(disposition.contains("invoicegpj.exe"), "{disposition}");
    assert_clean("Content-Disposition", &disposition);

    let deadline = Instant::now() + Duration::from_secs(10);
    let receipt = loop {
        if let Some(mail) = app.smtp.messages().into_iter().find(|m| m.to == ["sender@example.test"]) {
            break mail;
        }
        assert!(Instant::now() < deadline, "no receipt for the sender");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(receipt.text().contains("invoicegpj.exe"), "{}", receipt.text());
    assert_clean("the receipt", &receipt.text());
}

both_backends!(invisible_characters_in_a_file_name_sender_name_and_message_reach_no_page_header_or_mail);
