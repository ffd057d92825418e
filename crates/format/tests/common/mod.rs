//! Helpers shared by rf-format's integration tests.

/// Where each gzip member of a finished recording ends (compressed offsets).
pub fn member_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut member = flate2::bufread::GzDecoder::new(rest);
        std::io::copy(&mut member, &mut std::io::sink()).expect("a whole member");
        rest = member.into_inner();
        ends.push(bytes.len() - rest.len());
    }
    ends
}
