// Meterwise's window onto libxml2's pull parser (xmlTextReader). Only the Transfer module's Metalink reader
// imports it: Metalink files are the one XML Meterwise reads.
#ifndef METERWISE_CLIBXML2_SHIM_H
#define METERWISE_CLIBXML2_SHIM_H

// Debian's libxml2 is built with ICU, and its encoding.h then includes ICU's headers, which clash with the
// copy of ICU Foundation carries (one module may not see two definitions of UErrorCode). Nothing here uses
// the encoding handlers those headers serve (only their pointers pass through libxml2), so ICU is left out.
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED

#include <libxml/xmlreader.h>
#include <libxml/xmlerror.h>

#endif
