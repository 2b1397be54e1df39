//! English strings.

use super::{ErrorText, Text};

pub const TEXT: Text = Text {
    lang_name: "English",
    site_tagline: "Hand one file to one person, safely.",
    skip_to_content: "Skip to content",
    language_switch_label: "Language",
    footer: "watasu — files are deleted from the server after download or expiry.",
    home_title: "Hand one file to one person, safely",
    home_lead: "watasu delivers a file to exactly one person. The link alone downloads nothing: the recipient proves they can read the registered mailbox with a one-time code, and then the file downloads once.",
    home_steps: [
        "The sender uploads a file and names the recipient's email address.",
        "The recipient opens the link and enters the code sent to that address.",
        "The file downloads once and is then deleted from the server.",
    ],
    error_request_id: "Reference for support",
    error_back_home: "Back to the start page",
    error_bad_request: ErrorText {
        title: "This request could not be understood",
        body: "Something in what was sent is not valid. Go back, check what you entered, and try again.",
    },
    error_forbidden: ErrorText {
        title: "This action was refused",
        body: "The form may be too old or was sent from another site. Reload the page and try again.",
    },
    error_not_found: ErrorText {
        title: "This page is not available",
        body: "The address may be mistyped, or the page no longer exists. Check the link you were given.",
    },
    error_method_not_allowed: ErrorText {
        title: "This page cannot be used that way",
        body: "Open the page through its link or button instead.",
    },
    error_gone: ErrorText {
        title: "This is no longer available",
        body: "It has already been used or has ended. Ask the person who sent it to share it again.",
    },
    error_too_large: ErrorText {
        title: "What was sent is too large",
        body: "Choose a smaller file, or shorten what you typed, and try again.",
    },
    error_too_many: ErrorText {
        title: "Too many attempts",
        body: "Please wait a little, then try again.",
    },
    error_internal: ErrorText {
        title: "Something went wrong on our side",
        body: "Nothing you did caused this. Please try again in a moment. If it keeps happening, tell the sender the reference below.",
    },
    error_unavailable: ErrorText {
        title: "The service is briefly unavailable",
        body: "Please try again in a minute. Nothing has been lost.",
    },
};
