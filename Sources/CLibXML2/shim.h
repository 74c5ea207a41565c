#ifndef CAREGATE_CLIBXML2_SHIM_H
#define CAREGATE_CLIBXML2_SHIM_H
#include <libxml/xmlversion.h>
/* Debian's libxml2 is built with ICU, whose headers clash with Foundation's bundled ICU module
   ("UErrorCode has different definitions"). Only pointers to the encoding handler are used here, so its
   ICU-dependent fields are not needed. */
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlreader.h>
#include <libxml/xmlerror.h>
#endif
