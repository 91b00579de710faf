package io.lakestats.spark;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * An object that is another in every respect (a {@link Proxy} implementing every public
 * interface of the original's class and superclasses, each call forwarded) except the calls an
 * {@link Override} answers. Spark's planner and the format's rules test the interfaces a table,
 * scan builder or scan implements (runtime filtering, push-downs, partitioning, ordering,
 * metrics, ...): they find the same ones.
 */
final class Forwarding implements InvocationHandler {
  /** Answers a call itself (returning a value, possibly null) or declines with {@link #PASS}. */
  interface Override {
    Object answer(Object original, Method method, Object[] args) throws Throwable;
  }

  static final Object PASS = new Object();

  private final Object original;
  private final Override override;

  private Forwarding(Object original, Override override) {
    this.original = original;
    this.override = override;
  }

  /** The proxy, or the original itself when no class loader sees every interface. */
  static Object proxy(Object original, List<Class<?>> extra, Override override) {
    Set<Class<?>> interfaces = new LinkedHashSet<>();
    for (Class<?> c = original.getClass(); c != null; c = c.getSuperclass()) {
      collect(c, interfaces);
    }
    interfaces.addAll(extra);
    List<Class<?>> visible = new ArrayList<>();
    for (Class<?> i : interfaces) {
      if (Modifier.isPublic(i.getModifiers())) {
        visible.add(i);
      }
    }
    ClassLoader loader = loaderSeeing(visible, original.getClass().getClassLoader(),
        Forwarding.class.getClassLoader(), Thread.currentThread().getContextClassLoader());
    if (loader == null) {
      return original;
    }
    return Proxy.newProxyInstance(
        loader, visible.toArray(new Class<?>[0]), new Forwarding(original, override));
  }

  private static void collect(Class<?> c, Set<Class<?>> out) {
    for (Class<?> i : c.getInterfaces()) {
      if (out.add(i)) {
        collect(i, out);
      }
    }
  }

  private static ClassLoader loaderSeeing(List<Class<?>> classes, ClassLoader... candidates) {
    for (ClassLoader loader : candidates) {
      if (loader == null) {
        continue;
      }
      boolean all = true;
      for (Class<?> c : classes) {
        try {
          all &= Class.forName(c.getName(), false, loader) == c;
        } catch (ClassNotFoundException e) {
          all = false;
        }
      }
      if (all) {
        return loader;
      }
    }
    return null;
  }

  /** The original behind a proxy made here (itself otherwise). */
  static Object unwrap(Object value) {
    if (value != null && Proxy.isProxyClass(value.getClass())
        && Proxy.getInvocationHandler(value) instanceof Forwarding) {
      return ((Forwarding) Proxy.getInvocationHandler(value)).original;
    }
    return value;
  }

  @java.lang.Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    Object answer = override.answer(original, method, args);
    if (answer != PASS) {
      return answer;
    }
    if (method.getName().equals("equals") && method.getParameterCount() == 1) {
      // equal to another wrapper of an equal original, never to the original itself: Spark
      // keeps a rule's result only when it differs from the node it rewrote
      Object other = args[0];
      return other == proxy || (other != null && unwrap(other) != other
          && original.equals(unwrap(other)));
    }
    try {
      return method.invoke(original, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
