package io.lakestats.spark;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Reflection on Scala case classes and on the formats' classes (not compiled against). The
 * methods found are kept per class: the rules run for every plan, and looking a method up
 * copies it (the lookups were a tenth to a fifth of a Filter's time on a core,
 * bench/filter_estimates.py).
 */
final class Reflect {
  private Reflect() {}

  /** Per class: its no-argument methods found so far, by name, made accessible. */
  private static final ClassValue<Map<String, Method>> METHODS = new ClassValue<>() {
    @Override
    protected Map<String, Method> computeValue(Class<?> type) {
      return new ConcurrentHashMap<>();
    }
  };

  /**
   * Per case class: how to copy it, found from its first instance copied (Scala 2.13 names a
   * field only through an instance, so the class alone cannot compute it).
   */
  private static final ClassValue<AtomicReference<Copier>> COPIERS = new ClassValue<>() {
    @Override
    protected AtomicReference<Copier> computeValue(Class<?> type) {
      return new AtomicReference<>();
    }
  };

  /** A case class's {@code copy}, its {@code copy$default$N} in order and its field names. */
  private record Copier(Method copy, Method[] defaults, List<String> fields) {}

  /** A no-argument method's result, found on the class or any superclass, accessible or not. */
  static Object call(Object target, String name) throws ReflectiveOperationException {
    Map<String, Method> found = METHODS.get(target.getClass());
    Method method = found.get(name);
    if (method == null) {
      method = declared(target.getClass(), name);
      found.put(name, method);
    }
    return method.invoke(target);
  }

  private static Method declared(Class<?> type, String name) throws NoSuchMethodException {
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      try {
        Method method = c.getDeclaredMethod(name);
        method.setAccessible(true);
        return method;
      } catch (NoSuchMethodException e) {
        // look further up
      }
    }
    throw new NoSuchMethodException(type.getName() + "." + name + "()");
  }

  /**
   * {@code value.copy(field = replacement)} of a Scala case class: every other argument is its
   * current value ({@code copy$default$N}), so the call does not depend on how many fields a
   * given Spark version's class has.
   */
  static Object copyWith(Object value, String field, Object replacement)
      throws ReflectiveOperationException {
    AtomicReference<Copier> found = COPIERS.get(value.getClass());
    Copier copier = found.get();
    if (copier == null) {
      copier = copier(value);
      found.set(copier);
    }
    int index = copier.fields().indexOf(field);
    if (index < 0) {
      throw new NoSuchFieldException(value.getClass().getName() + "." + field);
    }
    Object[] args = new Object[copier.defaults().length];
    for (int i = 0; i < args.length; i++) {
      args[i] = i == index ? replacement : copier.defaults()[i].invoke(value);
    }
    return copier.copy().invoke(value, args);
  }

  private static Copier copier(Object value) throws ReflectiveOperationException {
    Method copy = null;
    for (Method m : value.getClass().getMethods()) {
      if (m.getName().equals("copy")) {
        copy = m;
      }
    }
    if (copy == null) {
      throw new NoSuchMethodException(value.getClass().getName() + ".copy");
    }
    Method[] defaults = new Method[copy.getParameterCount()];
    List<String> fields = new ArrayList<>();
    for (int i = 0; i < defaults.length; i++) {
      defaults[i] = value.getClass().getMethod("copy$default$" + (i + 1));
      fields.add(fieldName(value, i));
    }
    return new Copier(copy, defaults, List.copyOf(fields));
  }

  /**
   * The name of a case class's {@code i}-th field: {@code productElementName} (Scala 2.13), else
   * (Scala 2.12, Spark 3.5) the {@code i}-th final instance field: Scala 2.12 declares the
   * constructor's fields in order before the body's vals (lazy vals, declared first, are not
   * final).
   */
  private static String fieldName(Object value, int i) throws ReflectiveOperationException {
    try {
      return (String) value.getClass().getMethod("productElementName", int.class).invoke(value, i);
    } catch (NoSuchMethodException e) {
      int seen = 0;
      for (java.lang.reflect.Field field : value.getClass().getDeclaredFields()) {
        int modifiers = field.getModifiers();
        if (java.lang.reflect.Modifier.isFinal(modifiers)
            && !java.lang.reflect.Modifier.isStatic(modifiers) && seen++ == i) {
          return field.getName();
        }
      }
      throw e;
    }
  }
}
