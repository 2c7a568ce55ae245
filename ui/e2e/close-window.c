/* Asks every X11 window named by argv[1] to close, as a window manager does when the user
 * clicks its close button: a WM_DELETE_WINDOW client message. Xvfb has no window manager,
 * and WebDriver's "close window" destroys the web view without asking the app.
 * Exit status: 0 when at least one window was asked, 1 when none has that name. */
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <stdio.h>
#include <string.h>

static int ask(Display *display, Window window, const char *name) {
  int asked = 0;
  char *title = NULL;
  if (XFetchName(display, window, &title) && title) {
    if (strcmp(title, name) == 0) {
      XEvent event;
      memset(&event, 0, sizeof event);
      event.xclient.type = ClientMessage;
      event.xclient.window = window;
      event.xclient.message_type = XInternAtom(display, "WM_PROTOCOLS", False);
      event.xclient.format = 32;
      event.xclient.data.l[0] = (long)XInternAtom(display, "WM_DELETE_WINDOW", False);
      event.xclient.data.l[1] = CurrentTime;
      XSendEvent(display, window, False, NoEventMask, &event);
      asked = 1;
    }
    XFree(title);
  }
  Window root, parent, *children = NULL;
  unsigned int count = 0;
  if (XQueryTree(display, window, &root, &parent, &children, &count)) {
    for (unsigned int i = 0; i < count; i++) asked |= ask(display, children[i], name);
    if (children) XFree(children);
  }
  return asked;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: close-window NAME\n");
    return 2;
  }
  Display *display = XOpenDisplay(NULL);
  if (!display) {
    fprintf(stderr, "close-window: cannot open the display\n");
    return 2;
  }
  int asked = ask(display, DefaultRootWindow(display), argv[1]);
  XSync(display, False);
  XCloseDisplay(display);
  return asked ? 0 : 1;
}
