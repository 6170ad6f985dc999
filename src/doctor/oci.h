// OCI image layouts checked offline (image-spec v1.1 layout, index, manifest, descriptors,
// referrers), and a saved registry reply to a referrers request classified.
// Pure functions over files; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "doctor/finding.h"

namespace edgedecode::doctor {

struct OciReport {
  std::vector<Finding> findings;   // path = blob or file inside the layout
  int manifests = 0, blobs_checked = 0, referrers = 0;
  std::vector<std::string> platforms;  // "linux/amd64 complete", "linux/arm64 INCOMPLETE"
};
// Codes (listed with every other code in doctor/finding.h). JSON is read as Go's encoding/json reads
// it into the image-spec structs (no BOM, every field of its declared type); never throws.
OciReport CheckOciLayout(const std::string& dir);

struct ReferrersVerdict {
  // kReferrersOk, kReferrersHtml, kReferrersLoginRedirect, kReferrersRedirect, kReferrersAuth,
  // kReferrersNotFound, kReferrersNotAcceptable, kReferrersNotIndex, kReferrersUnreadable (printed as
  // FindingCodeName: referrers-ok, ...)
  FindingCode code = FindingCode::kReferrersUnreadable;
  int http_status = 0;  // of the final reply (1xx and followed redirects skipped); 0 if no status line
  std::string message;  // what it is and what to change
};
ReferrersVerdict ClassifyReferrersResponse(const std::string& path);

}  // namespace edgedecode::doctor
