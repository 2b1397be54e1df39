//! Cost as the work grows: the landing page and the code step with more and more active shares,
//! and a sender's share list with 100,000 shares (keyset pagination: a deep page costs what the
//! first does).

use std::path::Path;

use watasu::db::Db;

use super::{
    Options, blocking,
    load::{self, WrkResult},
    procs::Watasu,
    seed, transfer,
};

/// One figure per size of the shares table.
pub struct Growth {
    /// Active shares in the table at each step.
    pub sizes: Vec<u64>,
    pub landing: Vec<WrkResult>,
    pub code: Vec<WrkResult>,
    pub list: ShareList,
}

/// A sender's share list: the first page and one near the end for a sender with many shares,
/// and the first page for a sender with few.
pub struct ShareList {
    pub shares: u64,
    pub first: WrkResult,
    pub deep: WrkResult,
    pub few: WrkResult,
}

fn sizes(o: &Options) -> Vec<u64> {
    if o.quick { vec![1_000, 10_000] } else { vec![10_000, 100_000, 1_000_000] }
}

pub async fn grow(db: &Db, server: &Watasu, work: &Path, token: &str, cookies: &Path, o: &Options) -> Growth {
    let seconds = (o.seconds / 2).max(1);
    let mut growth =
        Growth { sizes: sizes(o), landing: Vec::new(), code: Vec::new(), list: share_list(db, server, work, o).await };
    let mut active = 0;
    for (step, &size) in growth.sizes.clone().iter().enumerate() {
        seed::add_active(db, 1, size - active, &format!("step{step}")).await;
        active = size;
        let submissions = work.join(format!("growth-codes-{step}.txt"));
        load::code_submissions(db, 1, o.code_shares / 2, &submissions).await;
        eprintln!("bench: {size} active shares: landing page and code step");
        let (w, base, t, c) = (work.to_owned(), server.base.clone(), token.to_owned(), cookies.to_owned());
        let warmup = o.warmup;
        growth.landing.push(blocking(move || load::landing(&w, &base, &t, &c, seconds, warmup)).await);
        let (w, base) = (work.to_owned(), server.base.clone());
        growth.code.push(blocking(move || load::code_step(&w, &base, &submissions, seconds)).await);
    }
    growth
}

async fn share_list(db: &Db, server: &Watasu, work: &Path, o: &Options) -> ShareList {
    let shares = if o.quick { 5_000 } else { 100_000 };
    let many = seed::add_sender(db, "many@example.test").await;
    seed::add_active(db, many, shares, "many").await;
    let few = seed::add_sender(db, "few@example.test").await;
    seed::add_active(db, few, 100, "few").await;
    let oldest: i64 = match db {
        Db::Sqlite(pool) => {
            sqlx::query_scalar("SELECT min(id) FROM shares WHERE sender_id = $1").bind(many).fetch_one(pool).await
        }
        Db::Postgres(pool) => {
            sqlx::query_scalar("SELECT min(id) FROM shares WHERE sender_id = $1").bind(many).fetch_one(pool).await
        }
    }
    .unwrap();
    eprintln!("bench: the share list of a sender with {shares} shares");
    let seconds = (o.seconds / 2).max(1);
    let page = async |user: i64, path: String, name: &str| {
        let (cookie, _) = transfer::signed_in(db, user).await;
        let file = work.join(format!("{name}-cookie.txt"));
        std::fs::write(&file, format!("{cookie}\n")).unwrap();
        let (w, base, warmup) = (work.to_owned(), server.base.clone(), o.warmup);
        blocking(move || load::page(&w, &base, &path, &file, seconds, warmup)).await
    };
    ShareList {
        shares,
        first: page(many, "/shares".into(), "list-first").await,
        deep: page(many, format!("/shares?before={}", oldest + 40), "list-deep").await,
        few: page(few, "/shares".into(), "list-few").await,
    }
}
