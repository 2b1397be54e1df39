//! The words of a share's timeline around its events: the zone its times are in (said once), and
//! the labels that tell a share's links apart.

pub struct TimelineText {
    /// Under the timeline's heading; `{zone}` is the reader's zone ("日本時間", "UTC").
    pub zone_line: &'static str,
    /// The link the share was created with, on its mail.
    pub first_link: &'static str,
    /// A link sent later; `{n}` counts the links, the first one being 1, so the first new one is 2.
    pub new_link: &'static str,
}

pub const EN: TimelineText =
    TimelineText { zone_line: "Times are in {zone}.", first_link: "first link", new_link: "new link ({n})" };

pub const JA: TimelineText =
    TimelineText {
        zone_line: "時刻は{zone}です。", first_link: "最初のリンク", new_link: "新しいリンク（{n}）"
    };
