#include <libxml/xmlversion.h>
// libxml2's ICU support would pull the system's ICU headers into Swift, where they
// clash with Foundation's own ICU module; nothing here uses libxml2's encoders.
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
