//! Our MCP client of a gateway over HTTP.

use wasmgate_client::{ClientConfig, HttpConfig, HttpTransport, McpClient};
use wasmgate_oauth::SecretSource;
use wasmgate_protocol::ProtocolVersion;

/// A client of the gateway serving at `url`, speaking one of `versions` (all the client
/// speaks when empty), sending `token` as its bearer token when given; connected within
/// 30 s, or the test fails.
pub async fn http_client(url: &str, versions: &[ProtocolVersion], token: Option<&str>) -> McpClient {
    let mut http = HttpConfig::new("wasmgate", url);
    http.bearer = token.map(|token| SecretSource::Value(token.to_owned()));
    let mut config = ClientConfig::default();
    if !versions.is_empty() {
        config.versions = versions.to_vec();
    }
    let connect = McpClient::connect("wasmgate", HttpTransport::new(&http).unwrap(), config);
    tokio::time::timeout(std::time::Duration::from_secs(30), connect)
        .await
        .expect("the client connects within 30 s")
        .unwrap()
}
