//! The recipient's walk over HTTP with JavaScript off (plain forms), and its security properties:
//! the address step, the code step, and the download.

mod asking;
mod download;
mod verifying;
