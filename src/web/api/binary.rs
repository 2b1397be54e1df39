//! Answers of bytes: a file that arrived, or the ZIP archive of them, answered exactly as the
//! request's page answers it (`web::arrived`), and documented as a binary body with its headers.

use std::marker::PhantomData;

use poem::{IntoResponse, Response};
use poem_openapi::{
    ApiResponse,
    registry::{MetaHeader, MetaMediaType, MetaResponse, MetaResponses, MetaSchema, MetaSchemaRef, Registry},
    types::Type,
};

/// The media type of what is answered.
pub trait Media: Send {
    const TYPE: &'static str;
}

/// One stored file, whatever it holds.
pub struct OctetStream;

impl Media for OctetStream {
    const TYPE: &'static str = "application/octet-stream";
}

/// A ZIP archive of several files.
pub struct Zip;

impl Media for Zip {
    const TYPE: &'static str = "application/zip";
}

/// The page's file response, as the API's operation answers it.
pub struct Download<M: Media>(Response, PhantomData<M>);

impl<M: Media> Download<M> {
    pub fn new(response: Response) -> Self {
        Self(response, PhantomData)
    }
}

impl<M: Media> IntoResponse for Download<M> {
    fn into_response(self) -> Response {
        self.0
    }
}

fn header(name: &str, description: &str) -> MetaHeader {
    MetaHeader {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        required: true,
        deprecated: false,
        schema: String::schema_ref(),
    }
}

impl<M: Media> ApiResponse for Download<M> {
    fn meta() -> MetaResponses {
        let bytes = || {
            let schema =
                MetaSchemaRef::Inline(Box::new(MetaSchema { format: Some("binary"), ..MetaSchema::new("string") }));
            vec![MetaMediaType { content_type: M::TYPE, schema }]
        };
        let named = || {
            vec![
                header("Content-Disposition", "`attachment` with the name (RFC 6266, `filename*` for any script)"),
                header("ETag", "The strong validator to send as `If-Range` when resuming"),
            ]
        };
        let mut ranged = named();
        ranged.push(header("Content-Range", "Which bytes of the whole this is"));
        MetaResponses {
            responses: vec![
                MetaResponse {
                    description: "The bytes, all of them.",
                    status: Some(200),
                    status_range: None,
                    content: bytes(),
                    headers: named(),
                },
                MetaResponse {
                    description: "The part a `Range` header asked for.",
                    status: Some(206),
                    status_range: None,
                    content: bytes(),
                    headers: ranged,
                },
                MetaResponse {
                    description: "The asked range starts past the end; `Content-Range` says the length.",
                    status: Some(416),
                    status_range: None,
                    content: Vec::new(),
                    headers: vec![header("Content-Range", "`bytes */` and the whole length")],
                },
            ],
        }
    }

    fn register(_registry: &mut Registry) {}
}
